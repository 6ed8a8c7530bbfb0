# want: 4:3 Conflicting load and command
step "benchmark" "rps" {
  command = "./bench"
  load "http" {
    url = "http://127.0.0.1:8080/"
  }
}
