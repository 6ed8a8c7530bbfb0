step "benchmark" "throughput" {
  load "openai" {
    url         = "http://127.0.0.1:8000/v1/chat/completions"
    model       = "default"
    concurrency = 1024
    requests    = 4096
    max_tokens  = 256
  }
  postcondition {
    condition = self.metrics.total_tokens_per_s >= 1000
  }
}

step "benchmark" "script" {
  command = "./bench.sh --json"
  repeat  = 5
  metric "qps" {
    json = "results.qps"
  }
  metric "errors" {
    json = "results.errors"
  }
}
