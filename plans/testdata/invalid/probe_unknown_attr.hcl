# want: 8:17 Unsupported attribute
# detail: Did you mean "status"?
step "wait" "ready" {
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition = probe.health.stauts == 200
  }
}
