# warn: 12:28 Unquoted value in a command
variable "dir" {
  type = string
}

locals {
  log = "${var.dir}/server.log"
}

step "assert" "log" {
  probe "exec" "tail" {
    command = "tail -n 1 ${local.log}"
  }
  postcondition {
    condition = probe.tail.exit_code == 0
  }
}
