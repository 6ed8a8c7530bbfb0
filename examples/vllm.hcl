# A reference plan: serve a model with vLLM on a GPU host over SSH, prove
# the server runs the configuration under trial, check that it answers,
# then measure throughput and latency.
#
#   lockstep run examples/vllm.hcl -var host=gpu-node-1 -var tp=2

plan "vllm" {
  description = "Serve a model with vLLM, check that it answers, and measure throughput and latency"
}

variable "host" {
  type        = string
  default     = "gpu-node-1"
  description = "GPU host, a name or an alias from ~/.ssh/config"
}

variable "model" {
  type        = string
  default     = "meta-llama/Llama-3.1-8B-Instruct"
  description = "Hugging Face model to serve"
}

variable "tp" {
  type        = number
  default     = 1
  description = "tensor parallel size: how many GPUs serve the model"
}

variable "gpu_memory_utilization" {
  type    = number
  default = 0.9
  validation {
    condition     = var.gpu_memory_utilization > 0 && var.gpu_memory_utilization <= 1
    error_message = "gpu_memory_utilization is a fraction between 0 and 1."
  }
}

variable "hf_token" {
  type        = string
  default     = ""
  sensitive   = true
  description = "Hugging Face token for gated models"
}

locals {
  port = 8000
  base = "http://127.0.0.1:${local.port}"
}

target "gpu" {
  ssh {
    host = var.host
    user = "root"
  }
  env = {
    HF_TOKEN = var.hf_token
  }
}

step "assert" "gpus_free" {
  target      = target.gpu
  description = "Enough GPUs, and none held by a leftover server"

  probe "gpu" "gpus" {}

  postcondition {
    condition     = probe.gpus.count >= var.tp
    error_message = "the host has fewer GPUs than tp"
  }
  postcondition {
    condition     = length(probe.gpus.processes) == 0
    error_message = "another process holds a GPU: stop it before launching"
  }
}

step "launch" "server" {
  target  = target.gpu
  command = "vllm serve ${shellquote(var.model)} --port ${local.port} --tensor-parallel-size ${var.tp} --gpu-memory-utilization ${var.gpu_memory_utilization}"
  log     = "/root/vllm.log"
  timeout = "2m"

  postcondition {
    condition     = strcontains(self.log, "tensor_parallel_size=${var.tp}")
    error_message = "the server that started is not running the tensor parallel size under trial"
  }
}

step "wait" "ready" {
  target   = target.gpu
  timeout  = "20m"
  interval = "5s"

  probe "log" "server" {
    step = step.launch.server
  }
  probe "http" "health" {
    url = "${local.base}/health"
  }

  postcondition {
    condition = probe.health.status == 200
  }
  postcondition {
    condition = strcontains(probe.server.text, "Application startup complete")
  }
  abort_if {
    condition     = can(regex("Traceback|CUDA out of memory|torch.OutOfMemoryError", probe.server.text))
    error_message = "the server failed while loading"
  }
  progress = try(tonumber(regex("checkpoint shards:\\s+(\\d+)% Completed", probe.server.last_line)[0]) / 100, null)
}

step "assert" "coherent" {
  target = target.gpu

  probe "http" "chat" {
    url    = "${local.base}/v1/chat/completions"
    method = "POST"
    json = {
      model      = var.model
      max_tokens = 16
      messages   = [{ role = "user", content = "What is 2+2?" }]
    }
  }

  postcondition {
    condition     = probe.chat.status == 200 && strcontains(probe.chat.json.choices[0].message.content, "4")
    error_message = "the model did not answer coherently"
  }
}

step "benchmark" "throughput" {
  target = target.gpu

  load "openai" {
    url           = "${local.base}/v1/chat/completions"
    model         = var.model
    concurrency   = 64
    requests      = 1024
    prompt_tokens = 512
    max_tokens    = 256
    expect        = "\\S"
  }

  postcondition {
    condition     = self.metrics.errors == 0
    error_message = "some requests failed or answered nothing"
  }
  postcondition {
    condition = self.metrics.output_tokens_per_s >= 1000
  }
}

step "benchmark" "latency" {
  target = target.gpu

  load "openai" {
    url         = "${local.base}/v1/chat/completions"
    model       = var.model
    concurrency = 1
    requests    = 32
    max_tokens  = 128
  }

  postcondition {
    condition     = self.metrics.ttft_p99_ms <= 500
    error_message = "time to first token is too slow at concurrency 1"
  }
}

step "run" "log_tail" {
  target      = target.gpu
  description = "Keep the end of the server's log with the attempt, pass or fail"
  command     = "tail -n 100 /root/vllm.log"
  always      = true
}
