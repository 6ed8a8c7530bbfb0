# want: 10:13 Invalid step reference
# detail: A log probe reads from a launch's start; step.run.setup is not a launch. Write since = step.launch.NAME.
step "run" "setup" {
  command = "true"
}

step "wait" "w" {
  probe "log" "app" {
    path  = "/tmp/app.log"
    since = step.run.setup
  }
  postcondition {
    condition = probe.app.last_line != ""
  }
}
