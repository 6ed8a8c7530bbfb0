# want: 7:10 Duplicate metric "rps"
step "benchmark" "b" {
  command = "./bench"
  metric "rps" {
    regex = "rps: (\\d+)"
  }
  metric "rps" {
    regex = "requests/s: (\\d+)"
  }
}
