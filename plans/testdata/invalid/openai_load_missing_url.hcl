# want: 3:3 Missing argument
step "benchmark" "tput" {
  load "openai" {
    concurrency = 8
  }
}
