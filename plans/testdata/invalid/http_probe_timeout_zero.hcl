# want: 6:15 Invalid attribute value
# detail: timeout must be longer than zero.
step "assert" "health" {
  probe "http" "health" {
    url     = "http://127.0.0.1:8080/health"
    timeout = "0s"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
