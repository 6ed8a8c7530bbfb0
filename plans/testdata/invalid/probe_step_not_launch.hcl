# want: 8:12 Invalid step reference
step "run" "build" {
  command = "make"
}

step "wait" "w" {
  probe "log" "build" {
    step = step.run.build
  }
  postcondition {
    condition = true
  }
}
