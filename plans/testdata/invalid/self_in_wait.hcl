# want: 4:17 Invalid reference
step "wait" "ready" {
  postcondition {
    condition = self.alive
  }
}
