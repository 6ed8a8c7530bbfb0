package plans

import "github.com/zclconf/go-cty/cty"

// loadKinds describes the load kinds.
func loadKinds() []LoadKind {
	str, num, boolean, dyn := cty.String, cty.Number, cty.Bool, cty.DynamicPseudoType
	strMap := cty.Map(cty.String)
	return []LoadKind{
		{
			Name: "http", Doc: "HTTP requests at a concurrency or a rate",
			Attrs: []Attr{
				{Name: "url", Type: str, Doc: "URL; 127.0.0.1 is the target's loopback", Required: true},
				{Name: "method", Type: str, Doc: "HTTP method", Default: "GET"},
				{Name: "headers", Type: strMap, Doc: "request headers", Default: "{}"},
				{Name: "body", Type: str, Doc: "request body"},
				{Name: "concurrency", Type: num, Doc: "requests in flight at once", Default: "1"},
				{Name: "rate", Type: num, Doc: "requests per second (open loop); unset means as fast as concurrency allows"},
				{Name: "duration", Type: str, Doc: "how long to send requests"},
				{Name: "requests", Type: num, Doc: "how many requests to send"},
				{Name: "warmup", Type: dyn, Doc: "time or requests not counted at the start"},
				{Name: "timeout", Type: str, Doc: "how long one request may take", Default: "30s"},
			},
			Metrics: httpLoadMetrics(),
		},
		{
			Name: "openai", Doc: "chat completions against an OpenAI-compatible server",
			Attrs: []Attr{
				{Name: "url", Type: str, Doc: "chat completions URL", Required: true},
				{Name: "model", Type: str, Doc: "model name sent in each request", Default: "default"},
				{Name: "stream", Type: boolean, Doc: "stream responses (needed for ttft and tpot)", Default: "true"},
				{Name: "concurrency", Type: num, Doc: "requests in flight at once", Default: "1"},
				{Name: "rate", Type: num, Doc: "requests per second (open loop)"},
				{Name: "requests", Type: num, Doc: "how many requests to send"},
				{Name: "duration", Type: str, Doc: "how long to send requests"},
				{Name: "warmup", Type: dyn, Doc: "requests not counted at the start"},
				{Name: "prompt_tokens", Type: num, Doc: "approximate length of generated prompts"},
				{Name: "prompts_file", Type: str, Doc: "file of prompts, one JSON string or messages list per line"},
				{Name: "max_tokens", Type: num, Doc: "max_tokens sent in each request"},
				{Name: "seed", Type: num, Doc: "seed for generated prompts"},
				{Name: "expect", Type: str, Doc: "regular expression every answer must match"},
				{Name: "ttft_limit_ms", Type: num, Doc: "count a request as failed when its first token takes longer"},
				{Name: "tpot_limit_ms", Type: num, Doc: "count a request as failed when its time per output token is longer"},
				{Name: "extra_body", Type: dyn, Doc: "fields merged into each request body"},
				{Name: "headers", Type: strMap, Doc: "request headers", Default: "{}"},
				{Name: "keep_requests", Type: boolean, Doc: "record each request and answer in the attempt", Default: "false"},
			},
			Metrics: openaiLoadMetrics(),
		},
	}
}

// httpLoadMetrics are the metrics load "http" reports (loads/http.go
// result, latencyMetrics in loads/loads.go).
func httpLoadMetrics() []string {
	return append([]string{
		"requests", "errors", "errors_connect", "errors_timeout", "errors_status_4xx", "errors_status_5xx",
		"errors_io", "errors_protocol", "bytes_received", "connections", "reconnects", "dropped", "late",
		"duration_s", "requests_per_s",
	}, suffixed([]string{"latency"}, "_p50_ms", "_p90_ms", "_p99_ms", "_p999_ms", "_max_ms", "_mean_ms")...)
}

// openaiLoadMetrics are the metrics load "openai" reports
// (loads/openai_metrics.go: answers_matching_share with expect, tpot and
// itl when streaming).
func openaiLoadMetrics() []string {
	return append([]string{
		"requests", "completed", "errors", "resent", "duration_s", "input_tokens", "output_tokens",
		"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s",
		"achieved_concurrency", "goodput_requests_per_s", "goodput_share", "answers_matching_share",
	}, suffixed([]string{"ttft", "e2e_latency", "tpot", "itl"}, "_mean_ms", "_median_ms", "_p99_ms")...)
}

// suffixed is every name with every suffix.
func suffixed(names []string, suffixes ...string) []string {
	var out []string
	for _, n := range names {
		for _, s := range suffixes {
			out = append(out, n+s)
		}
	}
	return out
}
