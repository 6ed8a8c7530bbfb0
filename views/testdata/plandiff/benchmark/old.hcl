step "benchmark" "throughput" {
  load "openai" {
    url         = "http://127.0.0.1:8000/v1/chat/completions"
    model       = "default"
    concurrency = 64
    requests    = 1024
  }
  postcondition {
    condition = self.metrics.total_tokens_per_s >= 1000
  }
}

step "benchmark" "script" {
  command = "./bench.sh"
  metric "qps" {
    regex = "qps: ([0-9.]+)"
  }
  metric "p99_ms" {
    regex = "p99: ([0-9.]+)"
  }
}
