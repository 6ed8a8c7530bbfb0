# want: 5:5 Unsupported argument
# detail: Did you mean "url"?
step "benchmark" "tput" {
  load "openai" {
    ulr         = "http://127.0.0.1:8000/v1/chat/completions"
    concurrency = 8
  }
}
