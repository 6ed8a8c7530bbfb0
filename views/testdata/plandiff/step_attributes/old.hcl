target "gpu" {
  ssh {
    host = "gpu-node-1"
  }
}

step "launch" "server" {
  description = "start the server"
  command     = "python3 -m server --port 8000"
  log         = "/tmp/server.log"
  env         = { CUDA_VISIBLE_DEVICES = "0" }
}

step "wait" "ready" {
  target   = target.gpu
  interval = "5s"
  probe "port" "api" {
    port = 8000
  }
  postcondition {
    condition = probe.api.open
  }
}

step "assert" "answers" {
  probe "http" "chat" {
    url = "http://127.0.0.1:8000/v1/models"
  }
  postcondition {
    condition = probe.chat.status == 200
  }
}

step "run" "report" {
  command = "echo done"
  always  = true
}
