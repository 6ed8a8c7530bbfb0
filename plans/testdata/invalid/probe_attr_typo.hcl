# want: 5:5 Unsupported argument
# detail: Did you mean "url"?
step "assert" "up" {
  probe "http" "health" {
    ulr = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
