# want: 6:19 Invalid attribute value
step "benchmark" "tput" {
  load "openai" {
    url         = "http://127.0.0.1:8000/v1/completions"
    timeout     = "30s"
    concurrency = 0
  }
}
