# want: 2:1 Missing postcondition
step "assert" "ok" {
  probe "port" "p" {
    port = 8080
  }
}
