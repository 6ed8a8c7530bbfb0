plan "openai-load" {
  description = "lockstep's built-in OpenAI load, streaming, against one chat completions URL, for bench/ssh-load.sh -l openai to set an ssh target beside the local one"
}

variable "url" {
  type        = string
  description = "The chat completions URL."
}

variable "concurrency" {
  type        = number
  default     = 8
  description = "Requests in flight (closed model)."
}

variable "duration" {
  type        = string
  default     = "5s"
  description = "Measured time."
}

variable "model" {
  type    = string
  default = "demo"
}

# bench/ssh-load.sh runs this plan as it is and, changing only the target
# line below, on a host over SSH.
step "benchmark" "load" {
  target  = target.local
  timeout = "5m"
  load "openai" {
    url         = var.url
    model       = var.model
    stream      = true
    concurrency = var.concurrency
    duration    = var.duration
    max_tokens  = 32
  }
  postcondition {
    condition     = self.metrics.errors == 0 && self.metrics.output_tokens_per_s > 0
    error_message = "the load saw errors or no output token"
  }
}
