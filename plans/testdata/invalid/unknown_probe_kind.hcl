# want: 4:9 Unknown probe kind
# detail: Did you mean "http"?
step "wait" "ready" {
  probe "htp" "health" {
    url = "http://127.0.0.1/health"
  }
  postcondition {
    condition = true
  }
}
