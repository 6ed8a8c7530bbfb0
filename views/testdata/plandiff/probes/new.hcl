step "launch" "server" {
  command = "./server"
}

step "launch" "worker" {
  command = "./worker"
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.worker
  }
  probe "http" "health" {
    url     = "http://127.0.0.1:8081/health"
    headers = { Authorization = "Bearer test" }
  }
  probe "port" "gpu" {
    port = 9400
  }
  probe "file" "weights" {
    path = "/models/weights.safetensors"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
