# want: 8:22 Unsupported attribute
# detail: Did you mean "pid"?
step "launch" "server" {
  command = "./server"
}

step "run" "show" {
  command = "ps -p ${step.launch.server.pidd}"
}
