plan "same" {
  description = "the same plan, written differently"
}

step "launch" "server" {
  command = "sleep 100"
  timeout = "120s"
  postcondition {
    condition = self.alive
  }
}

step "wait" "ready" {
  probe "port" "http" {
    port = 8080
  }
  postcondition {
    condition     = probe.http.open
    error_message = "nothing listens on 8080"
  }
}
