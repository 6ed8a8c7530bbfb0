# One step on the same host as plan.hcl: what lockstep costs before and
# around its steps (start-up, plan loading, the SSH connection, records).
# bench/ssh-steps.sh subtracts it from plan.hcl's time to get a per-step
# cost. It takes the same variables so that the script passes one set.
plan "ssh-one-step" {
  description = "one run step over SSH: lockstep's fixed cost"
}

variable "ssh_port" {
  type = number
}
variable "ssh_key" {
  type = string
}
variable "ssh_user" {
  type = string
}
variable "known_hosts" {
  type = string
}
variable "listen_port" {
  type        = number
  description = "a port the host listens on (the wait steps' subject)"
}
variable "file" {
  type = string
}
variable "file_size" {
  type = number
}
variable "file_sha256" {
  type = string
}

target "box" {
  ssh {
    host          = "127.0.0.1"
    port          = var.ssh_port
    user          = var.ssh_user
    identity_file = var.ssh_key
    known_hosts   = var.known_hosts
  }
}

step "run" "true" {
  target  = target.box
  command = "true"
}
