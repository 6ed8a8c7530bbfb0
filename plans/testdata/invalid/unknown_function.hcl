# want: 6:17 Call to unknown function
# detail: Did you mean "length"?
step "run" "a" {
  command = "date"
  postcondition {
    condition = lenght(self.stdout) > 0
  }
}
