# want: 6:14 Progress is not a number
step "wait" "ready" {
  probe "log" "server" {
    path = "/tmp/server.log"
  }
  progress = probe.server.last_line
  postcondition {
    condition = true
  }
}
