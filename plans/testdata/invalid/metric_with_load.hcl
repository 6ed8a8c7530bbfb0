# want: 6:3 Metric with a load
step "benchmark" "rps" {
  load "http" {
    url = "http://127.0.0.1:8080/"
  }
  metric "rps" {
    regex = "(\\d+)"
  }
}
