# want: 5:17 Reference to this step through step
step "run" "build" {
  command = "make"
  postcondition {
    condition = step.run.build.exit_code == 0
  }
}
