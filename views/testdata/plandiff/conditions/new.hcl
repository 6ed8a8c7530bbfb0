step "launch" "server" {
  command = "./server"
  postcondition {
    condition     = strcontains(self.log, "backend=triton")
    error_message = "the server is not running cutlass"
  }
  postcondition {
    condition = strcontains(self.log, "listening")
  }
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.server
  }
  postcondition {
    condition     = strcontains(probe.server.text, "ready")
    error_message = "the server did not log ready in time"
  }
  postcondition {
    condition     = !strcontains(probe.server.text, "NaN")
    error_message = "the server logged NaN"
  }
  abort_if {
    condition     = strcontains(probe.server.text, "Traceback")
    error_message = "the server crashed"
  }
}
