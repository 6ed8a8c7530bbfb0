# The quickstart: start the in-repo demo server, wait until it has loaded,
# check that it answers a real question, and stop it. Runs on this machine
# from the repository's root:
#
#   lockstep run examples/quickstart.hcl
#   lockstep run examples/quickstart.hcl -var backend=triton
#   lockstep run examples/quickstart.hcl --matrix fault=none,nan,ignore-config

plan "quickstart" {
  description = "Start the demo server, wait until it is ready, and check that it answers"
}

variable "backend" {
  type        = string
  default     = "cutlass"
  description = "backend the demo server is told to use; the launch confirms it from the server's own log"
  validation {
    condition     = can(regex("^[a-z0-9_]+$", var.backend))
    error_message = "backend is a lower-case name such as cutlass or triton."
  }
}

variable "fault" {
  type        = string
  default     = "none"
  description = "a failure for the demo server to show, to see how lockstep reports it: none, nan (healthy but answers NaN), ignore-config (runs another backend than asked), fail-while-loading, crash-on-request"
  validation {
    condition     = contains(["none", "nan", "ignore-config", "fail-while-loading", "crash-on-request"], var.fault)
    error_message = "fault is one of none, nan, ignore-config, fail-while-loading, crash-on-request."
  }
}

locals {
  port       = 18080
  fault_flag = var.fault == "none" ? "" : " ${shellquote("--${var.fault}")}"
}

step "run" "build" {
  description = "Build the demo server, so the launch below starts the server itself"
  command     = "go build -o .lockstep/bin/demoserver ./examples/demoserver"
  timeout     = "5m"
}

step "launch" "server" {
  description = "Start the demo server with the backend under trial"
  command     = "exec .lockstep/bin/demoserver --port ${local.port} --backend ${shellquote(var.backend)} --load-time 4s${local.fault_flag}"
  log         = ".lockstep/quickstart-server.log"
  grace       = "500ms"

  postcondition {
    condition     = strcontains(self.log, "config: backend=${var.backend}")
    error_message = "the server that started is not running the backend under trial"
  }
  # The server said which config it runs, and it is another one: stop now
  # rather than wait for a line that will never come.
  abort_if {
    condition     = strcontains(self.log, "config: backend=") && !strcontains(self.log, "config: backend=${var.backend} ")
    error_message = "the server that started is not running the backend under trial"
  }
}

step "wait" "ready" {
  description = "Wait for the shards to load and /health to answer 200"
  timeout     = "2m"
  interval    = "500ms"

  probe "log" "server" {
    step = step.launch.server # only what this launch wrote
  }
  probe "http" "health" {
    url = "http://127.0.0.1:${local.port}/health"
  }

  postcondition {
    condition = probe.health.status == 200
  }
  postcondition {
    condition     = strcontains(probe.server.text, "ready to serve on :${local.port}")
    error_message = "/health answered but the server never said it was ready"
  }
  abort_if {
    condition     = can(regex("panic:|fatal error:", probe.server.text))
    error_message = "the server crashed while loading"
  }
  progress = try(tonumber(regex("loading shards: (\\d+)%", probe.server.last_line)[0]) / 100, null)
}

step "assert" "answers" {
  description = "Readiness is not correctness: ask a real question"

  probe "http" "chat" {
    url    = "http://127.0.0.1:${local.port}/v1/chat/completions"
    method = "POST"
    json = {
      model      = "demo"
      max_tokens = 8
      messages   = [{ role = "user", content = "What is 2+2?" }]
    }
  }

  postcondition {
    condition     = probe.chat.status == 200
    error_message = "the chat endpoint did not answer 200"
  }
  postcondition {
    condition     = strcontains(probe.chat.json.choices[0].message.content, "4")
    error_message = "the server answered, but not with 4"
  }
}

step "benchmark" "throughput" {
  description = "Measure tokens/s at a fixed concurrency; a threshold decides"

  load "openai" {
    url         = "http://127.0.0.1:${local.port}/v1/chat/completions"
    model       = "demo"
    concurrency = 16
    requests    = 400
    max_tokens  = 16
    expect      = "[A-Za-z0-9]"
  }

  postcondition {
    condition     = self.metrics.errors == 0 && self.metrics.answers_matching_share == 1
    error_message = "the server failed or answered garbage under load"
  }
  postcondition {
    condition     = self.metrics.output_tokens_per_s > 100
    error_message = "throughput is below 100 output tokens/s"
  }
}
