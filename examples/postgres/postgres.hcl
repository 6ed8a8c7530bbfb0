# A debugging playbook: "I gave PostgreSQL more shared_buffers; is the
# server that answers really running with them, and what does pgbench say?"
# Runs on this machine against Debian's PostgreSQL, in a throwaway cluster
# on its own port, never the system service:
#
#   lockstep run examples/postgres/postgres.hcl
#   lockstep run examples/postgres/postgres.hcl -var shared_buffers=256MB
#   lockstep run examples/postgres/postgres.hcl --matrix shared_buffers=16MB,128MB
#
# The patterns it shows:
#   - a fresh cluster for every attempt (initdb into an empty folder): no
#     data, config or postmaster.pid left by an earlier attempt to explain
#     a result;
#   - the setting is proved by the server that answers (SHOW, and its size
#     in bytes, since PostgreSQL rewrites 1024MB as 1GB), not by the flag
#     you passed: a typo'd -c, an ALTER SYSTEM that wins, or a leftover
#     server on the port would each keep the old value;
#   - the listener is this launch's postmaster (same process group);
#   - readiness is not correctness: a real write and read, then the
#     benchmark, which must also report no failed transaction.
#
# PostgreSQL refuses to run as root. As root (CI, containers) the plan runs
# initdb and the server as the "postgres" user Debian's package creates,
# which is why the default work folder is under /tmp: that user must be
# able to reach it, and it cannot enter a folder under /root.

plan "postgres" {
  description = "Start a throwaway PostgreSQL cluster with a shared_buffers under trial, prove the server runs it, and measure pgbench's tps"
}

variable "shared_buffers" {
  type        = string
  default     = "128MB"
  description = "shared_buffers under trial, a size such as 16MB, 128MB or 1GB"
  validation {
    condition     = can(regex("^[1-9][0-9]*(kB|MB|GB)$", var.shared_buffers))
    error_message = "shared_buffers is a whole number with a unit PostgreSQL accepts: kB, MB or GB (such as 128MB)."
  }
}

variable "port" {
  type        = number
  default     = 15499
  description = "loopback port of the server under trial (not 5432: the system service may hold it)"
  validation {
    condition     = var.port > 1024 && var.port < 65536
    error_message = "port is an unprivileged TCP port, 1025 to 65535."
  }
}

variable "workdir" {
  type        = string
  default     = "/tmp/lockstep-postgres"
  description = "folder for the cluster, its socket and its log; run as root, the postgres user must be able to reach it"
  validation {
    condition     = length(trimspace(var.workdir)) > 0
    error_message = "workdir must name a folder."
  }
}

variable "pg_bin" {
  type        = string
  default     = "/usr/lib/postgresql/15/bin"
  description = "folder of initdb and postgres (Debian keeps them out of PATH, one folder per major version)"
}

variable "os_user" {
  type        = string
  default     = "postgres"
  description = "the user initdb and the server run as when lockstep runs as root"
}

variable "min_tps" {
  type        = number
  default     = 20
  description = "the lowest pgbench tps accepted; far below what a laptop does, so only a broken server fails it"
}

locals {
  psql = "psql -X -q -A -t -h 127.0.0.1 -p ${var.port} -U postgres -d postgres"
  # The size asked for in bytes, to compare with what the server reports
  # whatever unit it chooses to show.
  want_bytes = tonumber(regex("^([0-9]+)", var.shared_buffers)[0]) * lookup({ kB = 1024, MB = 1048576, GB = 1073741824 }, regex("(kB|MB|GB)$", var.shared_buffers)[0], 0)
  # Sets "$@" to the prefix that runs a command as os_user when lockstep
  # runs as root, and to nothing otherwise: write "$@" CMD. setpriv execs
  # CMD, so the launch's pid is the postmaster's own.
  as_user = "set --; if [ \"$(id -u)\" = 0 ]; then set -- setpriv --reuid=${shellquote(var.os_user)} --regid=${shellquote(var.os_user)} --init-groups --; fi"
}

step "run" "clear_leftover" {
  description = "Stop a server an earlier attempt left running (--keep, a crash of lockstep) on this work folder's cluster; never another"
  timeout     = "1m"
  # pg_ctl trusts postmaster.pid only when that postmaster still runs on
  # this data folder, so a stale file stops nothing.
  command = <<-EOT
    ${local.as_user}
    data=${shellquote("${var.workdir}/data")}
    [ -f "$data/postmaster.pid" ] || exit 0
    if "$@" ${shellquote("${var.pg_bin}/pg_ctl")} -D "$data" status >/dev/null 2>&1; then
      "$@" ${shellquote("${var.pg_bin}/pg_ctl")} -D "$data" stop -m fast -t 30
    else
      echo "stale postmaster.pid: no server runs on $data"
    fi
  EOT
}

step "assert" "port_free" {
  description = "Nothing listens on the port yet: whatever answers later is this attempt's server"

  probe "port" "pg" {
    port = var.port
  }

  postcondition {
    condition     = !probe.pg.open
    error_message = "port ${var.port} is already held by pid ${try(probe.pg.pid, "?")} (${try(probe.pg.command, "unknown")}); stop it, or choose another port with -var port=N"
  }
}

step "run" "initdb" {
  description = "Create a fresh cluster in an empty folder, with trust auth (it listens on loopback only, for the length of the plan)"
  timeout     = "2m"
  command     = <<-EOT
    set -eu
    ${local.as_user}
    mkdir -p ${shellquote(var.workdir)}
    cd ${shellquote(var.workdir)}
    dir=$(pwd)
    rm -rf data sock
    if [ "$(id -u)" = 0 ]; then chown ${shellquote(var.os_user)} "$dir"; fi
    if ! "$@" test -w "$dir"; then
      echo "the user the server runs as cannot write to $dir (a parent folder closed to it?): choose another workdir" >&2
      exit 1
    fi
    "$@" mkdir -m 700 sock
    "$@" ${shellquote("${var.pg_bin}/initdb")} -D "$dir/data" -U postgres --auth=trust --no-sync --no-instructions -E UTF8 >initdb.log 2>&1 || { cat initdb.log >&2; exit 1; }
    echo "$dir"
  EOT

  postcondition {
    condition     = startswith(trimspace(self.stdout), "/")
    error_message = "initdb did not report the cluster's folder"
  }
}

step "launch" "server" {
  description = "Start the postmaster in the foreground, loopback only, with the shared_buffers under trial"
  command     = "${local.as_user}; dir=${shellquote(trimspace(step.run.initdb.stdout))}; exec \"$@\" ${shellquote("${var.pg_bin}/postgres")} -D \"$dir/data\" -p ${var.port} -k \"$dir/sock\" -c listen_addresses=127.0.0.1 -c shared_buffers=${shellquote(var.shared_buffers)}"
  log         = "${var.workdir}/postgres.log"
  grace       = "500ms"
  timeout     = "1m"

  abort_if {
    condition     = can(regex("FATAL:|could not bind|could not create", self.log))
    error_message = "the postmaster refused to start: see its log"
  }
}

step "wait" "ready" {
  description = "Wait until this postmaster says it accepts connections and holds the port"
  timeout     = "1m"
  interval    = "200ms"

  probe "log" "server" {
    step = step.launch.server # only what this launch wrote
  }
  probe "port" "pg" {
    port = var.port
  }

  postcondition {
    condition     = strcontains(probe.server.text, "database system is ready to accept connections")
    error_message = "the postmaster never said it was ready"
  }
  postcondition {
    condition     = probe.pg.open && probe.pg.pgid == step.launch.server.pgid
    error_message = "port ${var.port} is held by pid ${try(probe.pg.pid, "?")} (${try(probe.pg.command, "unknown")}), not by this attempt's launch"
  }
  abort_if {
    condition     = can(regex("FATAL:|PANIC:", probe.server.text))
    error_message = "the server reported a fatal error while starting"
  }
}

step "assert" "config_runs" {
  description = "Ask the running server for its shared_buffers"

  probe "exec" "shared_buffers" {
    command = "${local.psql} -c 'SHOW shared_buffers' -c \"SELECT pg_size_bytes(current_setting('shared_buffers'))\""
  }

  postcondition {
    condition     = probe.shared_buffers.exit_code == 0
    error_message = "psql could not ask the server: ${trimspace(probe.shared_buffers.stderr)}"
  }
  postcondition {
    condition     = tonumber(split("\n", trimspace(probe.shared_buffers.stdout))[1]) == local.want_bytes
    error_message = "the server runs shared_buffers = ${split("\n", trimspace(probe.shared_buffers.stdout))[0]}, not ${var.shared_buffers}"
  }
}

step "assert" "round_trip" {
  description = "Readiness is not correctness: write a row and read it back"

  probe "exec" "rows" {
    command = "${local.psql} -c 'CREATE TABLE lockstep_probe (v text)' -c \"INSERT INTO lockstep_probe VALUES ('written')\" -c 'SELECT v FROM lockstep_probe'"
  }

  postcondition {
    condition     = probe.rows.exit_code == 0 && trimspace(probe.rows.stdout) == "written"
    error_message = "the row written was not read back: ${trimspace(probe.rows.stdout)} ${trimspace(probe.rows.stderr)}"
  }
}

step "run" "pgbench_init" {
  description = "Create pgbench's tables at scale 1 (100000 accounts)"
  command     = "pgbench -h 127.0.0.1 -p ${var.port} -U postgres -i -s 1 -q postgres"
  timeout     = "2m"
}

step "benchmark" "tps" {
  description = "TPC-B-like transactions from 4 clients for 3 seconds"
  command     = "pgbench -h 127.0.0.1 -p ${var.port} -U postgres -c 4 -j 2 -T 3 postgres"
  timeout     = "1m"

  metric "tps" {
    regex = "tps = ([0-9.]+)"
  }
  metric "latency_avg_ms" {
    regex = "latency average = ([0-9.]+) ms"
  }
  metric "failed_transactions" {
    regex = "number of failed transactions: ([0-9]+)"
  }

  postcondition {
    condition     = self.metrics.failed_transactions == 0
    error_message = "pgbench reported failed transactions"
  }
  postcondition {
    condition     = self.metrics.tps >= var.min_tps
    error_message = "tps is below ${var.min_tps}"
  }
}
