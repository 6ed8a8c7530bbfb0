# want: 4:13 Invalid repeat
step "benchmark" "b" {
  command = "./bench"
  repeat  = 0
  metric "rps" {
    regex = "rps: ([0-9.]+)"
  }
}
