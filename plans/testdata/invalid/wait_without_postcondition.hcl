# want: 2:1 Missing postcondition
step "wait" "ready" {
  timeout = "1m"
  probe "port" "p" {
    port = 8080
  }
}
