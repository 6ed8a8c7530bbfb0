# want: 5:13 Invalid regular expression
step "benchmark" "b" {
  command = "./bench"
  metric "rps" {
    regex = "rps: (\\d+"
  }
}
