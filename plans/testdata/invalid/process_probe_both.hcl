# want: 5:5 Conflicting arguments
step "assert" "running" {
  probe "process" "server" {
    match = "server"
    pid   = 42
  }
  postcondition {
    condition = probe.server.alive
  }
}
