# want: 9:17 Unknown metric
# detail: A load "openai" reports no metric "ttft_p95_ms". Did you mean "ttft_p99_ms"?
step "benchmark" "chat" {
  load "openai" {
    url      = "http://127.0.0.1:30000/v1/chat/completions"
    requests = 10
  }
  postcondition {
    condition = self.metrics.ttft_p95_ms < 500
  }
}
