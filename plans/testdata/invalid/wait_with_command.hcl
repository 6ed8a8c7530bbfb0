# want: 4:3 Unsupported argument
# detail: add a probe "exec" block
step "wait" "ready" {
  command = "curl -f http://127.0.0.1:8080/health"
  postcondition {
    condition = true
  }
}
