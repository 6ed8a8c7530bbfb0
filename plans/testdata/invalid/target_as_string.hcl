# want: 10:13 Invalid target
# detail: Write target = target.gpu, without quotes.
target "gpu" {
  ssh {
    host = "gpu-1"
  }
}

step "run" "a" {
  target  = "gpu"
  command = "nvidia-smi"
}
