# want: 10:13 Reference to undeclared target
# detail: Did you mean "gpu"?
target "gpu" {
  ssh {
    host = "gpu-1"
  }
}

step "run" "a" {
  target  = target.gpu2
  command = "nvidia-smi"
}
