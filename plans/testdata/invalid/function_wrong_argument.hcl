# want: 5:48 Too many function arguments
step "run" "a" {
  command = "date"
  postcondition {
    condition = strcontains(self.exit_code, 0, 1)
  }
}
