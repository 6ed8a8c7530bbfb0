# A debugging playbook: "I changed nginx's worker count; is the nginx that
# answers the one I started, with my config and my files, and what does
# the change do to throughput?" Runs on this machine against Debian's
# nginx, on its own port and folder, never the system service:
#
#   lockstep run examples/nginx/nginx.hcl
#   lockstep run examples/nginx/nginx.hcl -var workers=2
#   lockstep run examples/nginx/nginx.hcl --matrix workers=1,2
#
# The patterns it shows:
#   - a page carrying a fresh token, written by this attempt: a 200 from a
#     leftover nginx (or the system one) serving other files cannot pass
#     for this attempt's;
#   - the config that runs is proved by the server: the workers it says it
#     started, and the worker processes in the launch's own process group;
#   - the listener is this launch's (same process group), not a leftover;
#   - nothing outside the work folder: pid, logs and temp files all inside
#     it, errors to the launch's log, daemon off so the runner owns it.

plan "nginx" {
  description = "Serve a page with nginx on a worker count under trial, prove it is this attempt's server and config, and measure its throughput"
}

variable "workers" {
  type        = number
  default     = 1
  description = "worker_processes under trial"
  validation {
    condition     = var.workers >= 1 && var.workers <= 16 && floor(var.workers) == var.workers
    error_message = "workers is a whole number of worker processes, 1 to 16."
  }
}

variable "port" {
  type        = number
  default     = 18399
  description = "loopback port of the server under trial (not 80: the system service may hold it)"
  validation {
    condition     = var.port > 1024 && var.port < 65536
    error_message = "port is an unprivileged TCP port, 1025 to 65535."
  }
}

variable "workdir" {
  type        = string
  default     = ".lockstep/nginx"
  description = "folder for the config, the page, the logs and nginx's temp files, relative to where lockstep runs"
  validation {
    condition     = length(trimspace(var.workdir)) > 0
    error_message = "workdir must name a folder."
  }
}

variable "min_requests_per_s" {
  type        = number
  default     = 1000
  description = "the lowest throughput accepted; far below what a laptop does, so only a broken server fails it"
}

locals {
  url = "http://127.0.0.1:${var.port}/"
}

step "run" "clear_leftover" {
  description = "Stop an nginx an earlier attempt left running (--keep, a crash of lockstep) from this work folder; never another"
  timeout     = "15s"
  # The pid file alone is not proof: the pid may since belong to another
  # program. Stop it only if it is still an nginx master.
  command = <<-EOT
    f=${shellquote("${var.workdir}/nginx.pid")}
    [ -f "$f" ] || exit 0
    pid=$(cat "$f")
    case $(tr '\0' ' ' < /proc/"$pid"/cmdline 2>/dev/null) in
    "nginx: master process"*) ;;
    *) echo "stale pid file, pid $pid is not an nginx master"; rm -f "$f"; exit 0 ;;
    esac
    kill -QUIT "$pid"
    for i in $(seq 50); do [ -d /proc/"$pid" ] || break; sleep 0.1; done
    if [ -d /proc/"$pid" ]; then echo "nginx pid $pid did not stop" >&2; exit 1; fi
    echo "stopped a leftover nginx, pid $pid"
  EOT
}

step "assert" "port_free" {
  description = "Nothing listens on the port yet: whatever answers later is this attempt's server"

  probe "port" "http" {
    port = var.port
  }

  postcondition {
    condition     = !probe.http.open
    error_message = "port ${var.port} is already held by pid ${try(probe.http.pid, "?")} (${try(probe.http.command, "unknown")}); stop it, or choose another port with -var port=N"
  }
}

step "run" "site" {
  description = "Write the config and a page carrying a fresh token into the work folder"
  command     = <<-EOT
    set -eu
    mkdir -p ${shellquote(var.workdir)}
    cd ${shellquote(var.workdir)}
    dir=$(pwd)
    mkdir -p html tmp
    rm -f nginx.pid access.log
    token=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
    printf 'lockstep nginx example %s\n' "$token" > html/index.html
    {
      # As root, nginx hands its workers to "nobody", who may not be able
      # to read a work folder under /root or a test's private temp folder.
      # This server listens on loopback only, for the length of the plan.
      if [ "$(id -u)" = 0 ]; then echo "user root root;"; fi
      echo "worker_processes ${var.workers};"
      echo "pid $dir/nginx.pid;"
      echo "error_log stderr notice;"
      echo "events { worker_connections 1024; }"
      echo "http {"
      echo "  access_log $dir/access.log;"
      for t in client_body proxy fastcgi uwsgi scgi; do echo "  $${t}_temp_path $dir/tmp/$t;"; done
      echo "  server {"
      echo "    listen 127.0.0.1:${var.port};"
      echo "    root $dir/html;"
      echo "  }"
      echo "}"
    } > nginx.conf
    nginx -t -q -p "$dir" -e stderr -c "$dir/nginx.conf"
    printf '%s\n%s\n' "$dir" "$token"
  EOT

  postcondition {
    condition     = length(split("\n", trimspace(self.stdout))) == 2
    error_message = "the site was not written"
  }
}

step "launch" "server" {
  description = "Start nginx in the foreground on the config just written"
  command     = "dir=${shellquote(split("\n", trimspace(step.run.site.stdout))[0])}; exec nginx -p \"$dir\" -e stderr -c \"$dir/nginx.conf\" -g 'daemon off;'"
  log         = "${var.workdir}/nginx.log"
  grace       = "500ms"
  timeout     = "30s"

  abort_if {
    condition     = can(regex("\\[emerg\\]", self.log))
    error_message = "nginx refused to start (an [emerg] in its log: a port taken, a bad directive)"
  }
  postcondition {
    condition     = length(regexall("start worker process [0-9]+", self.log)) == var.workers
    error_message = "nginx did not say it started ${var.workers} worker processes"
  }
}

step "wait" "ready" {
  description = "Wait until this launch's process group holds the port, with the number of workers asked for"
  timeout     = "30s"
  interval    = "200ms"

  probe "port" "http" {
    port = var.port
  }
  # The workers run in the launch's process group: count them there, not
  # by name, which would count the system nginx's too.
  probe "exec" "workers" {
    command = "ps -o args= -g ${step.launch.server.pgid} | grep -c '^nginx: worker process' || true"
  }

  postcondition {
    condition     = probe.http.open && probe.http.pgid == step.launch.server.pgid
    error_message = "port ${var.port} is held by pid ${try(probe.http.pid, "?")} (${try(probe.http.command, "unknown")}), not by this attempt's launch"
  }
  postcondition {
    condition     = tonumber(trimspace(probe.workers.stdout)) == var.workers
    error_message = "the launch runs ${trimspace(probe.workers.stdout)} worker processes, not ${var.workers}"
  }
}

step "assert" "serves_this_attempt" {
  description = "Readiness is not correctness: the page served is the one this attempt wrote"

  probe "http" "page" {
    url = local.url
  }

  postcondition {
    condition     = probe.page.status == 200
    error_message = "GET / did not answer 200"
  }
  postcondition {
    condition     = trimspace(probe.page.body) == "lockstep nginx example ${split("\n", trimspace(step.run.site.stdout))[1]}"
    error_message = "GET / answered, but not with the page this attempt wrote: a stale server or another root"
  }
}

step "benchmark" "throughput" {
  description = "16 connections for 3 seconds against the page"
  timeout     = "1m"

  load "http" {
    url         = local.url
    concurrency = 16
    duration    = "3s"
  }

  postcondition {
    condition     = self.metrics.errors == 0
    error_message = "requests failed under load"
  }
  postcondition {
    condition     = self.metrics.requests_per_s >= var.min_requests_per_s
    error_message = "throughput is below ${var.min_requests_per_s} requests/s"
  }
}

step "assert" "logged" {
  description = "The load went through this server: its access log holds the requests"

  probe "exec" "access" {
    command = "wc -l < ${shellquote("${var.workdir}/access.log")}"
  }

  postcondition {
    condition     = tonumber(trimspace(probe.access.stdout)) >= step.benchmark.throughput.metrics.requests
    error_message = "the access log has fewer lines than the load's requests: another server answered them"
  }
}
