# want: 3:3 Missing host
target "gpu" {
  ssh {
    user = "root"
  }
}
