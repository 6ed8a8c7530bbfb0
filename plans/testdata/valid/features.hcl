# Every block, attribute, probe and load kind at least once.
plan "features" {
  description = "exercises the whole language"
}

variable "flags" {
  type        = list(string)
  default     = ["--fast", "--verbose"]
  description = "extra flags"
}

variable "limits" {
  type = object({ rps = number, p99_ms = number })
  default = {
    rps    = 100
    p99_ms = 250
  }
}

variable "env" {
  type    = map(string)
  default = { MODE = "test" }
}

variable "secret" {
  type      = string
  default   = "hunter2"
  sensitive = true
}

locals {
  port   = 18081
  url    = "http://127.0.0.1:${local.port}"
  quoted = join(" ", [for f in var.flags : shellquote(f)])
}

target "box" {
  ssh {
    host                     = "box.example"
    user                     = "ci"
    port                     = 2222
    identity_file            = "~/.ssh/id_ed25519"
    known_hosts              = "~/.ssh/known_hosts"
    proxy_jump               = "bastion"
    passphrase_env           = "KEY_PASSPHRASE"
    insecure_ignore_host_key = false
    connect_timeout          = "5s"
  }
  env     = var.env
  workdir = "/srv"
}

target "local" {
  env = { LOCKSTEP = "1" }
}

step "run" "version" {
  description = "print a version as JSON"
  command     = "echo '{\"version\": \"1.2.3\"}' ${local.quoted}"
  env         = { TOKEN = var.secret }
  workdir     = "/tmp"
  timeout     = "30s"
  postcondition {
    condition     = self.json.version == "1.2.3"
    error_message = "unexpected version ${self.stdout}"
  }
}

step "launch" "server" {
  command = <<-EOT
    python3 -m http.server ${local.port} --bind 127.0.0.1
  EOT
  log     = "/tmp/server.log"
  grace   = "1s"
  keep    = true
  adopt   = true
  postcondition {
    condition = self.alive && self.pid > 0
  }
}

step "wait" "up" {
  timeout  = "1m"
  interval = "250ms"
  probe "port" "p" {
    port = local.port
    host = "127.0.0.1"
  }
  probe "process" "by_step" {
    step = step.launch.server
  }
  probe "process" "by_pid" {
    pid = step.launch.server.pid
  }
  probe "process" "by_match" {
    match = "http\\.server ${local.port}"
  }
  probe "log" "by_path" {
    path = step.launch.server.log_path
  }
  probe "log" "app" {
    path  = "/tmp/app.log"
    since = step.launch.server
  }
  probe "file" "f" {
    path = "/tmp/server.log"
  }
  probe "exec" "curl" {
    command = "curl -s ${shellquote(local.url)}"
    env     = { A = "b" }
  }
  probe "http" "root" {
    url     = local.url
    method  = "GET"
    headers = { Accept = "text/html" }
    timeout = "2s"

    follow_redirects = true
    require_own      = false
  }
  probe "gpu" "g" {}
  postcondition {
    condition = probe.p.open && probe.by_step.alive && probe.by_pid.count == 1 && length(probe.by_match.pids) > 0
  }
  postcondition {
    condition = probe.f.exists && probe.f.size >= 0 && probe.curl.exit_code == 0 && probe.root.status == 200
  }
  abort_if {
    condition     = !probe.by_step.alive || strcontains(probe.by_path.text, "Traceback")
    error_message = "the server died"
  }
  progress = probe.p.open ? 1 : 0
}

step "assert" "headers" {
  timeout = "5s"
  probe "http" "post" {
    url    = "${local.url}/echo"
    method = "POST"
    body   = jsonencode({ a = 1 })
  }
  probe "http" "post_json" {
    url  = "${local.url}/echo"
    json = { a = [1, 2], b = { c = true } }
  }
  postcondition {
    condition = lookup(probe.post.headers, "content-type", "") != "" || probe.post_json.latency_ms >= 0
  }
}

step "benchmark" "http" {
  load "http" {
    url         = local.url
    method      = "GET"
    headers     = {}
    body        = ""
    concurrency = 4
    rate        = 50
    duration    = "5s"
    requests    = 100
    warmup      = "1s"
    ramp        = "2s"
    timeout     = "2s"
    require_own = false
  }
  repeat = 3
  postcondition {
    condition = self.metrics.requests_per_s.median >= var.limits.rps
  }
}

step "benchmark" "openai" {
  load "openai" {
    url            = "${local.url}/v1/chat/completions"
    model          = "m"
    stream         = true
    concurrency    = 2
    rate           = 1
    requests       = 10
    duration       = "10s"
    warmup         = "1s"
    dataset        = "prompts.jsonl"
    dataset_format = "jsonl"
    prompts        = 5
    turns          = 2
    max_tokens     = 32
    seed           = 7
    expect         = "\\d"
    ttft_limit_ms  = 500
    tpot_limit_ms  = 50
    extra_body     = { temperature = 0 }
    headers        = { Authorization = "Bearer ${var.secret}" }
    keep_requests  = true
    timeout        = "2m"
    require_own    = false
  }
}

step "benchmark" "openai_synthetic" {
  load "openai" {
    url                  = "${local.url}/v1/completions"
    prompt_tokens        = 64
    shared_prefix_tokens = 16
    prefix_groups        = 2
    concurrency          = [1, 8, 64]
    ramp                 = "5s"
  }
  postcondition {
    condition = self.best.metrics.output_tokens_per_s > 0 && length([for l in self.levels : l if l.metrics.errors > 0]) == 0
  }
}

step "benchmark" "openai_goodput" {
  load "openai" {
    url              = "${local.url}/v1/completions"
    rate             = [1, 64]
    concurrency      = 64
    ttft_limit_ms    = 500
    goodput_target   = 0.99
    search_probes    = 6
    search_tolerance = 0.1
  }
  postcondition {
    condition = self.metrics.max_goodput_rate >= 8 && min(self.levels[*].metrics.goodput_share...) > 0
  }
}

step "benchmark" "cmd" {
  command = "./bench --json"
  repeat  = 2
  metric "rps" {
    json = "$.results[0].rps"
  }
  metric "p99_ms" {
    regex = "p99: ([0-9.]+)ms"
  }
  postcondition {
    condition = self.metrics.rps.median >= var.limits.rps && self.metrics.p99_ms.max <= var.limits.p99_ms && self.exit_code == 0
  }
}

step "run" "cleanup" {
  target  = target.box
  command = "rm -f /tmp/server.log && echo ${step.run.version.json.version} ${step.benchmark.cmd.metrics.rps.median}"
  always  = true
}
