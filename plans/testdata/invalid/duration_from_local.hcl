# want: 7:13 Invalid duration
locals {
  patience = "2d"
}

step "wait" "ready" {
  timeout = local.patience
  postcondition {
    condition = true
  }
}
