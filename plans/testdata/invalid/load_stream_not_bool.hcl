# want: 5:14 Incorrect attribute value type
step "benchmark" "tput" {
  load "openai" {
    url    = "http://127.0.0.1:8000/v1/chat/completions"
    stream = "yes"
  }
}
