# want: 6:17 Unsupported attribute
# detail: Did you mean "exit_code"?
step "run" "build" {
  command = "make"
  postcondition {
    condition = self.exit_cod == 0
  }
}
