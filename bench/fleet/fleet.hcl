# The fleet bench's two steps as a lockstep plan, the same as
# bench/fleet/playbook.yml: a command on every host, then a wait for a
# listening port on each host's own loopback (each host's sshd listens on
# 127.0.0.1:22 in its namespace). bench/fleet.sh runs it with the fleet's
# hosts and ssh_config.
plan "fleet" {}

variable "hosts" {
  type = list(string)
}
variable "fleet_config" {
  type = string
}

target "fleet" {
  ssh {
    hosts       = var.hosts
    config_file = var.fleet_config
  }
}

step "run" "run" {
  target  = target.fleet
  command = "true"
}

step "wait" "wait" {
  target  = target.fleet
  timeout = "30s"
  probe "port" "sshd" {
    host = "127.0.0.1"
    port = 22
  }
  postcondition {
    condition = probe.sshd.open
  }
}
