# want: 6:11 Invalid attribute value
// Two probes of a kind, one after the other: the second's config is
// decoded from its own attributes alone, none left from the first's.
step "wait" "w" {
  probe "process" "a" {
    pid = -1
  }
  probe "process" "b" {
    match = "server"
  }
  postcondition {
    condition = probe.a.alive && probe.b.alive
  }
}
