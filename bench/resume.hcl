plan "resume" {
  description = "a server that takes a while to load, proven, asserted and benchmarked: for bench/resume.sh to time a full run and a run --from benchmark.load to the load's first request"
}

variable "demoserver" {
  type        = string
  description = "Path of the demo server built from this tree."
}

variable "port" {
  type = number
}

variable "load_time" {
  type        = string
  default     = "5s"
  description = "How long the server takes to load its shards: the weights a run --from does not reload."
}

step "launch" "server" {
  command = "exec ${shellquote(var.demoserver)} --port ${var.port} --backend resume --load-time ${shellquote(var.load_time)} --warmup 0s"
  grace   = "100ms"
  postcondition {
    condition     = strcontains(self.log, "config: backend=resume")
    error_message = "the server is not running the config under trial"
  }
}

step "wait" "ready" {
  timeout  = "5m"
  interval = "100ms"
  probe "http" "health" {
    url = "http://127.0.0.1:${var.port}/health"
  }
  postcondition {
    condition = probe.health.status == 200
  }
}

step "assert" "answers" {
  probe "http" "chat" {
    url  = "http://127.0.0.1:${var.port}/v1/chat/completions"
    json = { model = "demo", max_tokens = 8, messages = [{ role = "user", content = "What is 2+2?" }] }
  }
  postcondition {
    condition = probe.chat.status == 200 && probe.chat.served_by.pid == step.launch.server.pid
  }
}

step "benchmark" "load" {
  load "http" {
    url         = "http://127.0.0.1:${var.port}/health"
    concurrency = 4
    requests    = 200
  }
  postcondition {
    condition = self.metrics.errors == 0
  }
}
