locals {
  port = 30000
  host = "127.0.0.1"
}

target "gpu" {
  ssh {
    host = "gpu-node-1"
    user = "root"
  }
}

target "old" {
  ssh {
    host = "old-node"
  }
}

step "run" "hello" {
  target  = target.gpu
  command = "echo ${local.host}:${local.port}"
}
