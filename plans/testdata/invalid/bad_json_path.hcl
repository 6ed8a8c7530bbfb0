# want: 5:12 Invalid JSON path
step "benchmark" "b" {
  command = "./bench --json"
  metric "rps" {
    json = "results..rps"
  }
}
