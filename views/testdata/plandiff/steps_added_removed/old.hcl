step "run" "build" {
  command = "make"
}

step "launch" "server" {
  command = "./server"
}

step "assert" "old_check" {
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
