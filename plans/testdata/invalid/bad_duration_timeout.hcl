# want: 4:13 Invalid duration
# detail: write "24h"
step "wait" "ready" {
  timeout = "5d"
  postcondition {
    condition = true
  }
}
