# want: 8:8 Duplicate target "gpu"
target "gpu" {
  ssh {
    host = "gpu-1"
  }
}

target "gpu" {
  ssh {
    host = "gpu-2"
  }
}
