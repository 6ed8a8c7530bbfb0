# want: 5:3 Missing argument
# want: 6:5 Unsupported argument
# detail: A log probe has no argument "url"; url belongs to http probes. Its arguments are path, step and since.
step "wait" "ready" {
  probe "log" "server" {
    url = "http://127.0.0.1:8080/log"
  }
  postcondition {
    condition = true
  }
}
