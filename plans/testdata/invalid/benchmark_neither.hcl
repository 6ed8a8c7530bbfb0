# want: 2:1 Missing load or command
step "benchmark" "rps" {
  repeat = 3
}
