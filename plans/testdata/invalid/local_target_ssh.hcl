# want: 3:3 The local target cannot use ssh
target "local" {
  ssh {
    host = "gpu-1"
  }
}
