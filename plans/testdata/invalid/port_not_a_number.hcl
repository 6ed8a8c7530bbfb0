# want: 5:12 Incorrect attribute value type
# detail: port must be a number, not "http".
step "assert" "listening" {
  probe "port" "web" {
    port = "http"
  }
  postcondition {
    condition = probe.web.open
  }
}
