step "launch" "server" {
  command = "./server"
  postcondition {
    condition     = strcontains(self.log, "backend=cutlass")
    error_message = "the server is not running cutlass"
  }
  postcondition {
    condition = strcontains(self.log, "listening")
  }
  postcondition {
    condition     = self.alive
    error_message = "the server died"
  }
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.server
  }
  postcondition {
    condition     = strcontains(probe.server.text, "ready")
    error_message = "the server never said ready"
  }
  abort_if {
    condition     = strcontains(probe.server.text, "Traceback")
    error_message = "the server crashed"
  }
  abort_if {
    condition = strcontains(probe.server.text, "CUDA error")
  }
}
