# want: 4:3 Unsupported block type
step "run" "rps" {
  command = "true"
  load "http" {
    url = "http://127.0.0.1:8080/"
  }
}
