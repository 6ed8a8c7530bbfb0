# want: 3:14 Invalid duration
step "wait" "ready" {
  interval = "0s"
  postcondition {
    condition = true
  }
}
