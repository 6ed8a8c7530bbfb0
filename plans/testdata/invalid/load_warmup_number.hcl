# want: 5:14 Invalid attribute value
step "benchmark" "tput" {
  load "http" {
    url    = "http://127.0.0.1:8000/"
    warmup = 5
  }
}
