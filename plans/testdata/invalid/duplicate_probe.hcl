# want: 6:16 Duplicate probe "health"
step "wait" "ready" {
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  probe "port" "health" {
    port = 8080
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
