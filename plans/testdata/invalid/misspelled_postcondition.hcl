# want: 6:3 Unsupported block type
step "wait" "ready" {
  probe "port" "p" {
    port = 8080
  }
  postcondtion {
    condition = probe.p.open
  }
}
