# want: 9:12 Reference to undeclared step
# detail: Did you mean "server"?
step "launch" "server" {
  command = "./server"
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.sever
  }
  postcondition {
    condition = strcontains(probe.server.text, "ready")
  }
}
