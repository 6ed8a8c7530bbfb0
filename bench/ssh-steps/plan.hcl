# The 20-step plan of bench/ssh-steps.sh: 8 run steps, 6 waits on a
# listening port, 6 file assertions, all on one SSH host. The ssh script
# (steps.sh) and the Ansible playbook (playbook.yml) beside it do the same
# 20 checks. Variables come from the script (-var).
plan "ssh-steps" {
  description = "20 steps over SSH: run, wait on a port, file checks"
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

step "run" "echo" {
  target  = target.box
  command = "echo hello"
  postcondition {
    condition = self.stdout == "hello\n"
  }
}

step "wait" "port_1" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_1" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}

step "run" "tmp_dir" {
  target  = target.box
  command = "test -d /tmp"
}

step "run" "uname" {
  target  = target.box
  command = "uname -s"
  postcondition {
    condition = trimspace(self.stdout) == "Linux"
  }
}

step "wait" "port_2" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_2" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}

step "run" "id" {
  target  = target.box
  command = "id -un"
  postcondition {
    condition = trimspace(self.stdout) == var.ssh_user
  }
}

step "run" "file_listed" {
  target  = target.box
  command = "ls ${shellquote(var.file)}"
}

step "wait" "port_3" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_3" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}

step "run" "echo_env" {
  target  = target.box
  command = "echo \"$HOME\""
  postcondition {
    condition = substr(self.stdout, 0, 1) == "/"
  }
}

step "run" "date" {
  target  = target.box
  command = "date +%s"
  postcondition {
    condition = tonumber(trimspace(self.stdout)) > 0
  }
}

step "wait" "port_4" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_4" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}

step "wait" "port_5" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_5" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}

step "wait" "port_6" {
  target   = target.box
  timeout  = "30s"
  interval = "100ms"
  probe "port" "listener" {
    port = var.listen_port
  }
  postcondition {
    condition = probe.listener.open
  }
}

step "assert" "file_6" {
  target = target.box
  probe "file" "data" {
    path = var.file
  }
  postcondition {
    condition = probe.data.exists && probe.data.size == var.file_size && probe.data.sha256 == var.file_sha256
  }
}
