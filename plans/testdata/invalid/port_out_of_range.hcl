# want: 5:12 Invalid attribute value
# detail: port must be from 1 to 65535, not 70000.
step "assert" "listening" {
  probe "port" "web" {
    port = 70000
  }
  postcondition {
    condition = probe.web.open
  }
}
