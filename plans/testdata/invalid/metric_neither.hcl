# want: 4:3 Missing argument
step "benchmark" "b" {
  command = "./bench"
  metric "rps" {}
}
