# want: 3:13 Invalid duration
step "wait" "ready" {
  timeout = 30
  postcondition {
    condition = true
  }
}
