# A debugging playbook: "I changed Redis's eviction policy; is the server
# that answers really running it, does it evict as I expect, and what did
# the change cost?" Runs on this machine against Debian's redis-server, on
# its own port and folder, never the system service:
#
#   lockstep run examples/redis/redis.hcl
#   lockstep run examples/redis/redis.hcl -var policy=volatile-lru
#   lockstep run examples/redis/redis.hcl --matrix policy=allkeys-lru,noeviction
#
# The patterns it shows:
#   - clear the ground first: a leftover server on the port would answer
#     every check below while the new one fails to bind, and the results
#     would be read as the new config's;
#   - prove the config that runs from the server itself (its log, CONFIG
#     GET, INFO's config_file), not from the file you wrote;
#   - prove the listener is this attempt's launch (same process group);
#   - readiness is not correctness: a real SET/GET, then the behaviour the
#     change is about (eviction under memory pressure), then the benchmark.

plan "redis" {
  description = "Start Redis with an eviction policy under trial, prove it runs and evicts as it should, and measure SET/GET throughput"
}

variable "policy" {
  type        = string
  default     = "allkeys-lru"
  description = "maxmemory-policy under trial"
  validation {
    condition = contains([
      "noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
      "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
    ], var.policy)
    error_message = "policy must be one of Redis's maxmemory-policy values: noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random or volatile-ttl."
  }
}

variable "port" {
  type        = number
  default     = 16399
  description = "loopback port of the server under trial (not 6379: the system service may hold it)"
  validation {
    condition     = var.port > 1024 && var.port < 65536
    error_message = "port is an unprivileged TCP port, 1025 to 65535."
  }
}

variable "workdir" {
  type        = string
  default     = ".lockstep/redis"
  description = "folder for the config, the log and the data, relative to where lockstep runs"
  validation {
    condition     = length(trimspace(var.workdir)) > 0
    error_message = "workdir must name a folder."
  }
}

variable "min_get_requests_per_s" {
  type        = number
  default     = 5000
  description = "the lowest median GET throughput accepted; far below what a laptop does, so only a broken server fails it"
}

locals {
  maxmemory = "8mb"
  # Fill well past maxmemory so the policy has to act: 16000 values of 1 KiB.
  fill_keys = 16000
  # Under allkeys-* Redis evicts any key; under volatile-* only keys with a
  # TTL, and the fill's keys have none, so those policies refuse writes
  # exactly as noeviction does. That surprise is what the fill step shows.
  evicts = startswith(var.policy, "allkeys-")
  cli    = "redis-cli -h 127.0.0.1 -p ${var.port}"
}

step "run" "clear_port" {
  description = "Stop a Redis left on the port by an earlier attempt; the assert below catches anything else there"
  # SHUTDOWN returns once the server has closed its listener; a port held
  # by anything else is left for the assert to report. Something that
  # accepts connections but never answers would hang redis-cli: hence the
  # timeout.
  command = "timeout 5 ${local.cli} shutdown nosave 2>/dev/null; exit 0"
  timeout = "10s"
}

step "assert" "port_free" {
  description = "Nothing listens on the port: whatever answers later is this attempt's server"

  probe "port" "redis" {
    port = var.port
  }

  postcondition {
    condition     = !probe.redis.open
    error_message = "port ${var.port} is still held by pid ${try(probe.redis.pid, "?")} (${try(probe.redis.command, "unknown")}); stop it, or choose another port with -var port=N"
  }
}

step "run" "config" {
  description = "Write a fresh config into the work folder: loopback only, no persistence, a small maxmemory and the policy under trial"
  command     = <<-EOT
    set -eu
    mkdir -p ${shellquote(var.workdir)}
    cd ${shellquote(var.workdir)}
    rm -f dump.rdb
    {
      echo "bind 127.0.0.1"
      echo "port ${var.port}"
      echo "daemonize no"
      echo 'logfile ""'
      printf 'dir %s\n' "$(pwd)"
      echo 'save ""'
      echo "appendonly no"
      echo "maxmemory ${local.maxmemory}"
      printf 'maxmemory-policy %s\n' ${shellquote(var.policy)}
    } > redis.conf
    printf '%s/redis.conf\n' "$(pwd)"
  EOT

  postcondition {
    condition     = endswith(trimspace(self.stdout), "/redis.conf")
    error_message = "the config was not written"
  }
}

step "launch" "server" {
  description = "Start redis-server in the foreground on the config just written"
  command     = "exec redis-server ${shellquote(trimspace(step.run.config.stdout))}"
  log         = "${var.workdir}/redis.log"
  grace       = "500ms"
  timeout     = "30s"

  # Redis says this when it ignored the file: a typo in the path would
  # otherwise start a server on the defaults (port 6379, no maxmemory).
  abort_if {
    condition     = strcontains(self.log, "no config file specified")
    error_message = "redis-server started on its default config, not on the file written above"
  }
  abort_if {
    condition     = can(regex("Address already in use|Could not create server TCP listening socket", self.log))
    error_message = "redis-server could not bind the port: another process took it after the check above"
  }
  postcondition {
    condition     = strcontains(self.log, "Configuration loaded") && strcontains(self.log, "port=${var.port}.")
    error_message = "the server's log does not show it loaded the config and took port ${var.port}"
  }
}

step "wait" "ready" {
  description = "Wait until this launch says it accepts connections and its own process group holds the port"
  timeout     = "30s"
  interval    = "200ms"

  probe "log" "server" {
    step = step.launch.server # only what this launch wrote
  }
  probe "port" "redis" {
    port = var.port
  }

  postcondition {
    condition     = strcontains(probe.server.text, "Ready to accept connections")
    error_message = "the server never said it was ready"
  }
  postcondition {
    condition     = probe.redis.open && probe.redis.pgid == step.launch.server.pgid
    error_message = "port ${var.port} is held by pid ${try(probe.redis.pid, "?")} (${try(probe.redis.command, "unknown")}), not by this attempt's launch"
  }
}

step "assert" "config_runs" {
  description = "Ask the running server for its config: the policy and the file it loaded"

  probe "exec" "policy" {
    command = "${local.cli} CONFIG GET maxmemory-policy"
  }
  probe "exec" "info" {
    command = "${local.cli} INFO server"
  }

  postcondition {
    condition     = probe.policy.exit_code == 0 && split("\n", trimspace(probe.policy.stdout))[1] == var.policy
    error_message = "the server runs maxmemory-policy ${try(split("\n", trimspace(probe.policy.stdout))[1], "(no answer)")}, not ${var.policy}"
  }
  postcondition {
    condition     = strcontains(probe.info.stdout, "config_file:${trimspace(step.run.config.stdout)}")
    error_message = "the server did not load the config written by this attempt"
  }
}

step "assert" "round_trip" {
  description = "Readiness is not correctness: write a value and read it back"

  probe "exec" "set_get" {
    command = "${local.cli} SET lockstep:probe ${shellquote("attempt-${var.policy}")} && ${local.cli} GET lockstep:probe"
  }

  postcondition {
    condition     = probe.set_get.exit_code == 0 && trimspace(probe.set_get.stdout) == "OK\nattempt-${var.policy}"
    error_message = "SET then GET did not return the value written"
  }
}

step "benchmark" "throughput" {
  description = "SET and GET throughput, three runs, judged on the median"
  command     = "redis-benchmark -h 127.0.0.1 -p ${var.port} -t set,get -n 20000 -q"
  repeat      = 3
  timeout     = "2m"

  # redis-benchmark -q ends each test with "SET: 81566.07 requests per
  # second, p50=0.391 msec"; its progress lines ("SET: rps=...") do not
  # match.
  metric "set_requests_per_s" {
    regex = "SET: ([0-9.]+) requests per second"
  }
  metric "get_requests_per_s" {
    regex = "GET: ([0-9.]+) requests per second"
  }

  postcondition {
    condition     = self.metrics.get_requests_per_s.median >= var.min_get_requests_per_s
    error_message = "median GET throughput is below ${var.min_get_requests_per_s} requests/s"
  }
}

step "run" "fill" {
  description = "Write 16000 values of 1 KiB into an 8 MB server: the policy must now act"
  command     = <<-EOT
    pad=$(head -c 1024 /dev/zero | tr '\0' x)
    seq 1 ${local.fill_keys} \
      | awk -v pad="$pad" '{ printf "SET fill:%d %s\r\n", $1, pad }' \
      | ${local.cli} --pipe 2>/dev/null | grep '^errors:'
    ${local.cli} INFO stats | grep '^evicted_keys:'
  EOT

  postcondition {
    condition     = can(regex("errors: [0-9]+, replies: ${local.fill_keys}", self.stdout))
    error_message = "the server did not answer every write"
  }
}

step "assert" "eviction" {
  description = "allkeys-* policies must make room by evicting, never refusing a write; noeviction and volatile-* (no key has a TTL) must refuse writes with OOM, never evict"

  postcondition {
    condition = (local.evicts
      ? tonumber(regex("evicted_keys:([0-9]+)", step.run.fill.stdout)[0]) > 0 && tonumber(regex("errors: ([0-9]+)", step.run.fill.stdout)[0]) == 0
      : tonumber(regex("evicted_keys:([0-9]+)", step.run.fill.stdout)[0]) == 0 && tonumber(regex("errors: ([0-9]+)", step.run.fill.stdout)[0]) > 0
    )
    error_message = "under ${var.policy} the fill gave ${trimspace(step.run.fill.stdout)}"
  }
}
