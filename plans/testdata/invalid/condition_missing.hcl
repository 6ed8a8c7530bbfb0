# want: 3:3 Missing condition
step "wait" "ready" {
  postcondition {
    error_message = "never ready"
  }
}
