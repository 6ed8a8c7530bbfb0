# want: 4:21 Reference to a later step
# detail: Move that step before this one.
step "run" "check" {
  command = "echo ${step.launch.server.pid}"
}

step "launch" "server" {
  command = "./server"
}
