plan "glm5" {
  description = "Bring up GLM-5-NVFP4 on SGLang and measure throughput"
}

variable "moe_backend" {
  type    = string
  default = "flashinfer_cutlass"
  validation {
    condition     = contains(["flashinfer_cutlass", "flashinfer_trtllm"], var.moe_backend)
    error_message = "moe_backend must be flashinfer_cutlass or flashinfer_trtllm."
  }
}

locals {
  port = 30000
}

target "gpu" {
  ssh {
    host = "gpu-node-1"          # resolved through ~/.ssh/config as ssh would
    user = "root"
  }
}

step "launch" "server" {
  target  = target.gpu
  command = "python3 -m sglang.launch_server --tp 8 --port ${local.port} --moe-runner-backend ${shellquote(var.moe_backend)}"
  log     = "/root/sglang.log"
  timeout = "2m"

  postcondition {
    condition     = strcontains(self.log, "moe_runner_backend='${var.moe_backend}'")
    error_message = "the server that started is not running the backend under trial"
  }
}

step "wait" "ready" {
  target   = target.gpu
  timeout  = "30m"
  interval = "5s"

  probe "log" "server" {
    step = step.launch.server       # only what this launch wrote
  }
  probe "http" "health" {
    url = "http://127.0.0.1:${local.port}/health"   # the target's loopback
  }

  postcondition {
    condition = probe.health.status == 200
  }
  postcondition {
    condition = strcontains(probe.server.text, "fired up and ready to roll!")
  }
  abort_if {
    condition     = can(regex("Traceback|CUDA error", probe.server.text))
    error_message = "the server reported an error while loading"
  }
  progress = try(tonumber(regex("shards:\\s+(\\d+)%", probe.server.last_line)[0]) / 100, null)
}

step "assert" "coherent" {
  target = target.gpu
  probe "http" "chat" {
    url    = "http://127.0.0.1:${local.port}/v1/chat/completions"
    method = "POST"
    json   = { model = "default", max_tokens = 16,
               messages = [{ role = "user", content = "What is 2+2?" }] }
  }
  postcondition {
    condition     = probe.chat.status == 200 && strcontains(probe.chat.json.choices[0].message.content, "4")
    error_message = "the model did not answer coherently"
  }
}

step "benchmark" "throughput" {
  target = target.gpu
  load "openai" {
    url         = "http://127.0.0.1:${local.port}/v1/chat/completions"
    concurrency = 1024
    requests    = 4096
  }
  postcondition {
    condition = self.metrics.total_tokens_per_s >= 1000
  }
}
