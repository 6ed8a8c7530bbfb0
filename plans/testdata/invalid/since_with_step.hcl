# want: 10:5 Conflicting arguments
# detail: A log probe with step already reads that launch's log from its start; since is for a probe with path. Remove since.
step "launch" "server" {
  command = "sleep 100"
}

step "wait" "w" {
  probe "log" "app" {
    step  = step.launch.server
    since = step.launch.server
  }
  postcondition {
    condition = probe.app.last_line != ""
  }
}
