# want: 7:27 Invalid regular expression
step "wait" "ready" {
  probe "log" "server" {
    path = "/tmp/server.log"
  }
  abort_if {
    condition = can(regex("Traceback|CUDA error(", probe.server.text))
  }
  postcondition {
    condition = true
  }
}
