step "run" "build" {
  command = "make"
}

step "launch" "server" {
  command = "./server"
}

step "wait" "ready" {
  description = "the server answers /health"
  timeout     = "30s"
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition     = probe.health.status == 200
    error_message = "/health did not answer 200"
  }
  abort_if {
    condition = !step.launch.server.alive
  }
}

step "run" "cleanup" {
  command = "rm -rf tmp"
  always  = true
}
