plan "llm-load" {
  description = "lockstep's built-in OpenAI load, streaming, a fixed number of requests from a prompts file, for bench/llm-peers.sh to run beside AIPerf and GuideLLM"
}

variable "url" {
  type        = string
  description = "The chat completions URL."
}

variable "model" {
  type        = string
  description = "The model name the server serves."
}

variable "concurrency" {
  type        = number
  default     = 4
  description = "Requests in flight (closed model)."
}

variable "requests" {
  type        = number
  default     = 64
  description = "Requests sent and counted."
}

variable "dataset" {
  type        = string
  description = "JSONL prompts, one {\"prompt\": ...} a line, sent in turn."
}

variable "max_tokens" {
  type        = number
  default     = 32
  description = "Output tokens asked of every request (ignore_eos: every answer runs to it)."
}

step "benchmark" "load" {
  timeout = "30m"
  load "openai" {
    url          = var.url
    model        = var.model
    stream       = true
    concurrency  = var.concurrency
    requests     = var.requests
    dataset      = var.dataset
    max_tokens   = var.max_tokens
    extra_body   = { ignore_eos = true, temperature = 0 }
  }
  postcondition {
    condition     = self.metrics.errors == 0 && self.metrics.completed == var.requests
    error_message = "the load saw errors or lost requests"
  }
}
