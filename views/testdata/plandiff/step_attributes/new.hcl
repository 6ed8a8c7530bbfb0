target "gpu" {
  ssh {
    host = "gpu-node-1"
  }
}

step "launch" "server" {
  description = "start the server with the new scheduler"
  command     = <<-EOT
    python3 -m server --port 8000 \
      --scheduler fcfs
  EOT
  log         = "/tmp/server-fcfs.log"
  grace       = "10s"
  env         = { CUDA_VISIBLE_DEVICES = "0,1" }
  workdir     = "/srv"
  keep        = true
}

step "wait" "ready" {
  timeout  = "30s"
  progress = try(tonumber(regex("(\\d+)%", "")[0]) / 100, null)
  probe "port" "api" {
    port = 8000
  }
  postcondition {
    condition = probe.api.open
  }
}

step "assert" "answers" {
  timeout = "1m"
  probe "http" "chat" {
    url = "http://127.0.0.1:8000/v1/models"
  }
  postcondition {
    condition = probe.chat.status == 200
  }
}

step "run" "report" {
  command = "echo done"
}
