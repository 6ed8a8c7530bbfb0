step "launch" "server" {
  command = "./server"
}

step "launch" "worker" {
  command = "./worker"
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.server
  }
  probe "http" "health" {
    url    = "http://127.0.0.1:8080/health"
    method = "GET"
  }
  probe "port" "metrics" {
    port = 9090
  }
  probe "exec" "gpu" {
    command = "nvidia-smi"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
