# want: 7:17 Condition is not a bool
step "wait" "ready" {
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition = probe.health.status
  }
}
