# want: 3:3 Missing argument
step "assert" "health" {
  probe "http" "health" {
    method = "GET"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}
