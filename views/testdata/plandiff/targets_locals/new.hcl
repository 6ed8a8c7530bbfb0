locals {
  port = 30001
  url  = "http://127.0.0.1:30001"
}

target "gpu" {
  ssh {
    host = "gpu-node-2"
    user = "root"
    port = 2222
  }
  workdir = "/srv"
}

target "cpu" {
  ssh {
    host = "cpu-node"
    user = "bench"
  }
}

step "run" "hello" {
  target  = target.gpu
  command = "echo ${local.url}:${local.port}"
}
