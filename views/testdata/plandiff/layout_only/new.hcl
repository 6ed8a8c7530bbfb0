# The same plan: comments, layout and durations written another way
# change nothing it does.
plan "same" {
  description = "the same plan, written differently"
}

step "launch" "server" {
  command = "sleep 100"   # long enough
  timeout = "2m"
  postcondition { condition = self.alive }
}

step "wait" "ready" {
  timeout = "5m" # the default, written out
  probe "port" "http" { port = 8080 }
  postcondition {
    condition     = probe.http.open   # the port answers
    error_message = "nothing listens on 8080"
  }
}
