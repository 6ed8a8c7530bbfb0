# want: 3:3 Missing argument
step "wait" "ready" {
  probe "log" "server" {}
  postcondition {
    condition = strcontains(probe.server.text, "ready")
  }
}
