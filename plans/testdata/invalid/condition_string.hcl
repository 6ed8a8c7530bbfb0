# want: 5:17 Condition is not a bool
step "run" "a" {
  command = "date"
  postcondition {
    condition = self.stdout
  }
}
