plan "http-load" {
  description = "lockstep's built-in HTTP load against one URL, for bench/http-load.sh and bench/ssh-load.sh to set beside wrk and hey, and an ssh target beside the local one"
}

variable "url" {
  type        = string
  description = "The URL every request GETs."
}

variable "concurrency" {
  type        = number
  default     = 64
  description = "Connections, each one keep-alive worker (closed model)."
}

variable "duration" {
  type        = string
  default     = "5s"
  description = "Measured time, as wrk -d and hey -z take it."
}

# bench/ssh-load.sh runs this plan as it is and, changing only the target
# line below, on a host over SSH.
step "benchmark" "load" {
  target = target.local
  # The load's own duration plus room to connect and drain; a hang fails
  # the step instead of stalling the bench.
  timeout = "5m"
  load "http" {
    url         = var.url
    concurrency = var.concurrency
    duration    = var.duration
  }
  postcondition {
    condition     = self.metrics.errors == 0 && self.metrics.requests_per_s > 0
    error_message = "the load saw errors or no successful request"
  }
}
