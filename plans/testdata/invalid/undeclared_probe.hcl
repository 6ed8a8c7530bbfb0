# want: 8:17 Reference to undeclared probe
# detail: Did you mean "health"?
step "wait" "ready" {
  probe "http" "health" {
    url = "http://127.0.0.1:8080/health"
  }
  postcondition {
    condition = probe.helth.status == 200
  }
}
