# want: 4:13 Invalid regular expression
step "assert" "running" {
  probe "process" "server" {
    match = "python3 -m sglang[."
  }
  postcondition {
    condition = probe.server.alive
  }
}
