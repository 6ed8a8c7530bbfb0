package loads_test

import (
	"github.com/zclconf/go-cty/cty"

	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
)

func runOpenAI(t *testing.T, o loads.OpenAI) loads.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := o.Run(ctx, nil, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// The server's truth: first token 200 ms after the request, then one every
// 100 ms, 6 tokens (e2e 700 ms, TPOT 500/5 = 100 ms: dividing by the 6
// tokens instead of the 5 intervals would give 83), 100-word prompts, 4
// requests in flight. Client and server run on testing/synctest's clock
// over in-memory connections, so the figures must be the server's exactly,
// however loaded the machine; token counts too.
func TestOpenAIStreamMetricsMatchServerTimings(t *testing.T) {
	for _, usage := range []bool{true, false} {
		for _, chat := range []bool{true, false} {
			name := map[bool]string{true: "chat", false: "completions"}[chat] + map[bool]string{true: " with usage", false: " without usage"}[usage]
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := loadtest.NewOpenAIPiped(loadtest.OpenAIConfig{TTFT: 200 * time.Millisecond, ITL: 100 * time.Millisecond, Tokens: 6, Usage: usage})
					defer srv.Close()
					path := map[bool]string{true: "/v1/chat/completions", false: "/v1/completions"}[chat]
					res, err := loads.OpenAI{URL: srv.URL + path, Stream: true, Concurrency: 4, Requests: 8, PromptTokens: 100}.Run(t.Context(), srv.Dial, nil)
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					m := res.Metrics
					exactly(t, m, "completed", 8)
					exactly(t, m, "errors", 0)
					exactly(t, m, "output_tokens", 8*6)
					exactly(t, m, "input_tokens", 8*100)
					for _, k := range []string{"ttft_median_ms", "ttft_mean_ms", "ttft_p99_ms"} {
						exactly(t, m, k, 200)
					}
					for _, k := range []string{"tpot_median_ms", "tpot_mean_ms", "itl_median_ms", "itl_mean_ms", "itl_p99_ms"} {
						exactly(t, m, k, 100)
					}
					exactly(t, m, "e2e_latency_median_ms", 700)
					exactly(t, m, "e2e_latency_p99_ms", 700)
					// 4 in flight, 700 ms each, two waves.
					exactly(t, m, "achieved_concurrency", 4)
					exactly(t, m, "duration_s", 1.4)
					exactly(t, m, "requests_per_s", 8/1.4)
					exactly(t, m, "output_tokens_per_s", 8*6/1.4)
					exactly(t, m, "input_tokens_per_s", 8*100/1.4)
					within(t, m, "total_tokens_per_s", 8*106/1.4-1e-9, 8*106/1.4+1e-9) // a sum of two rates
					// No limits: every completed request is good.
					exactly(t, m, "goodput_share", 1)
					exactly(t, m, "goodput_requests_per_s", 8/1.4)
					want := map[bool]string{true: "usage", false: "stream"}[usage]
					if got := res.Notes["token_source"]; got != want {
						t.Errorf("token_source = %q, want %q", got, want)
					}
					if srv.MaxInFlight() != 4 {
						t.Errorf("server saw %d requests at once, want 4", srv.MaxInFlight())
					}
				})
			})
		}
	}
}

func TestOpenAIWithoutStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := loadtest.NewOpenAIPiped(loadtest.OpenAIConfig{TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond, Tokens: 20, Usage: true})
		defer srv.Close()
		res, err := loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Concurrency: 2, Requests: 6, PromptTokens: 30}.Run(t.Context(), srv.Dial, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		m := res.Metrics
		exactly(t, m, "completed", 6)
		exactly(t, m, "output_tokens", 6*20)
		exactly(t, m, "input_tokens", 6*30)
		// The answer comes whole with its last token: 50 + 19*10 ms.
		exactly(t, m, "e2e_latency_median_ms", 240)
		// Without a stream the first token arrives with the last.
		exactly(t, m, "ttft_median_ms", 240)
		for _, k := range []string{"tpot_median_ms", "itl_median_ms"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s reported without a stream", k)
			}
		}
		if res.Notes["token_source"] != "usage" {
			t.Errorf("token_source = %q", res.Notes["token_source"])
		}
		b := srv.Bodies()[0]
		if b["stream"] != false || b["stream_options"] != nil {
			t.Errorf("request body %v: want stream false and no stream_options", b)
		}
	})
}

func TestOpenAIExpectKeepsFailingSamples(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 8, Usage: true, GarbageEvery: 4})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Requests: 20, Expect: `answer is 4`})
	exactly(t, res.Metrics, "answers_matching_share", 0.75)
	if len(res.Samples) != 5 {
		t.Fatalf("samples = %q, want 5 failing answers", res.Samples)
	}
	for _, s := range res.Samples {
		if !strings.HasPrefix(s, "zq zq") {
			t.Errorf("sample %q is not a failing answer", s)
		}
	}
}

// A reasoning model's server may send the whole answer as
// reasoning_content: its chunks are tokens, and Expect reads it when the
// content is empty.
func TestOpenAIReasoningContent(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 8, Reasoning: true})
		res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: stream, Requests: 3, Expect: `answer is 4`})
		srv.Close()
		m := res.Metrics
		exactly(t, m, "completed", 3)
		exactly(t, m, "output_tokens", 3*8)
		exactly(t, m, "answers_matching_share", 1)
		want := map[bool]string{true: "stream", false: "words"}[stream]
		if got := res.Notes["token_source"]; got != want {
			t.Errorf("stream %v: token_source = %q, want %q", stream, got, want)
		}
	}
}

func TestOpenAIGoodput(t *testing.T) {
	// Every 2nd request waits 1 s for its first token; the limit is 400 ms.
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 5,
		Usage: true, SlowEvery: 2, SlowTTFT: time.Second})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/completions", Stream: true, Requests: 10, Concurrency: 10,
		TTFTLimitMS: 400, TPOTLimitMS: 200})
	m := res.Metrics
	exactly(t, m, "goodput_share", 0.5)
	within(t, m, "goodput_requests_per_s", m["requests_per_s"]/2-0.001, m["requests_per_s"]/2+0.001)

	// A TPOT limit far below the server's 50 ms per token fails every
	// request (only a first token 160 ms late could bring one under 10 ms).
	srv2 := loadtest.NewOpenAI(loadtest.OpenAIConfig{ITL: 50 * time.Millisecond, Tokens: 5, Usage: true})
	defer srv2.Close()
	res = runOpenAI(t, loads.OpenAI{URL: srv2.URL + "/v1/completions", Stream: true, Requests: 4, Concurrency: 4, TPOTLimitMS: 10})
	exactly(t, res.Metrics, "goodput_share", 0)
}

func TestOpenAIErrorsCounted(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 3, Usage: true, FailEvery: 5})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Requests: 20, Concurrency: 2, KeepRequests: true})
	m := res.Metrics
	exactly(t, m, "requests", 20)
	exactly(t, m, "completed", 16)
	exactly(t, m, "errors", 4)
	exactly(t, m, "goodput_share", 0.8)
	if len(res.Samples) == 0 || !strings.Contains(res.Samples[0], "HTTP 500") {
		t.Errorf("samples = %q, want the HTTP 500", res.Samples)
	}
	if len(res.Requests) != 20 {
		t.Fatalf("kept %d request records, want 20", len(res.Requests))
	}
	var failed int
	for _, r := range res.Requests {
		switch {
		case r.Status == 500 && r.Error != "":
			failed++
		case r.Status == 200 && r.Error == "" && r.OutputTokens == 3 && r.E2E >= r.TTFT && r.TTFT > 0:
		default:
			t.Errorf("record %+v", r)
		}
	}
	if failed != 4 {
		t.Errorf("%d failed records, want 4", failed)
	}
}

func TestOpenAIRequestBodyAndModelDiscovery(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Model: "glm-5", Tokens: 2, Usage: true})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Requests: 2, MaxTokens: 7,
		ExtraBody: cty.ObjectVal(map[string]cty.Value{"temperature": cty.Zero, "ignore_eos": cty.True,
			"stream_options": cty.ObjectVal(map[string]cty.Value{"include_usage": cty.True, "continuous_usage_stats": cty.False})}),
		Headers: map[string]string{"Authorization": "Bearer x"}})
	if res.Notes["model"] != "glm-5" {
		t.Errorf("model note = %q, want the one /v1/models names", res.Notes["model"])
	}
	b := srv.Bodies()[0]
	for k, want := range map[string]any{"model": "glm-5", "max_tokens": 7.0, "stream": true, "temperature": 0.0, "ignore_eos": true} {
		if b[k] != want {
			t.Errorf("body[%q] = %v, want %v (body %v)", k, b[k], want, b)
		}
	}
	if so, _ := b["stream_options"].(map[string]any); so["continuous_usage_stats"] != false || so["include_usage"] != true {
		t.Errorf("stream_options = %v: extra_body must win", b["stream_options"])
	}

	// A model the server does not serve is an error per request.
	res = runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Model: "other", Requests: 2})
	exactly(t, res.Metrics, "errors", 2)
}

func TestOpenAIPromptsSeededAndFromFile(t *testing.T) {
	prompts := func(o loads.OpenAI) []string {
		srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 1, Usage: true})
		defer srv.Close()
		o.URL = srv.URL + "/v1/completions"
		runOpenAI(t, o)
		return srv.Prompts()
	}
	a := prompts(loads.OpenAI{Requests: 3, PromptTokens: 12, Seed: 1})
	b := prompts(loads.OpenAI{Requests: 3, PromptTokens: 12, Seed: 1})
	c := prompts(loads.OpenAI{Requests: 3, PromptTokens: 12, Seed: 2})
	if strings.Join(a, "|") != strings.Join(b, "|") {
		t.Errorf("same seed, different prompts:\n%q\n%q", a, b)
	}
	if a[0] == c[0] || a[0] == a[1] {
		t.Errorf("prompts repeat across seeds or requests: %q, %q", a, c)
	}
	if n := len(strings.Fields(a[0])); n != 12 {
		t.Errorf("prompt %q has %d words, want 12", a[0], n)
	}

	file := filepath.Join(t.TempDir(), "prompts.jsonl")
	os.WriteFile(file, []byte(`{"prompt": "one two three"}`+"\n\n"+
		`{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "four five"}]}`+"\n"), 0o644)
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 1, Usage: true})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Dataset: file, Requests: 4})
	// The server counts words: 3 + 4 + 3 + 4.
	exactly(t, res.Metrics, "input_tokens", 14)
	if got := srv.Prompts(); got[0] != "one two three" || got[1] != "be brief\nfour five" {
		t.Errorf("server saw prompts %q", got)
	}

	_, err := loads.OpenAI{URL: srv.URL + "/v1/completions", Dataset: file}.Run(context.Background(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `prompts.jsonl:3: "messages" need a chat endpoint`) {
		t.Errorf("messages to /v1/completions: error %v", err)
	}
}

func TestOpenAIOpenModelAndDuration(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 10 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 4, Usage: true})
	defer srv.Close()
	// Poisson arrivals at 40/s: 40 requests take about a second. Each
	// takes 30 ms; 16 in flight at most leaves none dropped.
	start := time.Now()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/completions", Stream: true, Rate: 40, Requests: 40, Concurrency: 16})
	exactly(t, res.Metrics, "completed", 40)
	within(t, res.Metrics, "duration_s", 0.4, time.Since(start).Seconds())
	if res.Notes["arrivals"] != "poisson" {
		t.Errorf("arrivals note = %q", res.Notes["arrivals"])
	}

	// A duration with a warm-up: the warm-up's requests are not counted
	// (both workers send one at the start, in the warm-up), nor its time.
	// Bounds from what happened, not from how fast: a loaded machine
	// sends fewer.
	before := srv.Requests()
	start = time.Now()
	res = runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/completions", Stream: true, Concurrency: 2,
		Warmup: 200 * time.Millisecond, Duration: 400 * time.Millisecond})
	wall := time.Since(start).Seconds()
	sent := float64(srv.Requests() - before)
	within(t, res.Metrics, "completed", 1, sent-2)
	within(t, res.Metrics, "duration_s", 0.4, wall-0.2)
}

// concurrency 1024 against the streaming server: the generator itself must
// not fail (file descriptors, connection pool, timers) and must really hold
// 1024 requests open: the server sends no token until it sees 1024 at once.
func TestOpenAIConcurrency1024(t *testing.T) {
	raiseFileLimit(t, 8192)
	// Slow tokens keep the event rate within what 2 shared cores running
	// the race detector can serve: 1024 streams at 5 events/s.
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 200 * time.Millisecond, ITL: 200 * time.Millisecond, Tokens: 8,
		Usage: true, Gate: 1024, GateTimeout: 20 * time.Second})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Concurrency: 1024, Requests: 2048, PromptTokens: 16})
	m := res.Metrics
	exactly(t, m, "errors", 0)
	exactly(t, m, "completed", 2048)
	exactly(t, m, "output_tokens", 2048*8)
	if got := srv.MaxInFlight(); got != 1024 {
		t.Errorf("server saw at most %d requests at once, want 1024", got)
	}
	t.Logf("achieved_concurrency %.0f, requests_per_s %.0f, ttft_p99 %.0f ms, duration %.1f s",
		m["achieved_concurrency"], m["requests_per_s"], m["ttft_p99_ms"], m["duration_s"])
}

func raiseFileLimit(t *testing.T, want uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < want {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d (max %d): %v", want, lim.Max, err)
	}
}

func TestOpenAICancel(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: time.Minute, Tokens: 2})
	defer srv.Close()
	for _, o := range []loads.OpenAI{
		{Concurrency: 8, Requests: 8},
		{Rate: 100, Concurrency: 2, Requests: 50}, // arrivals wait for a free slot
	} {
		o.URL, o.Model, o.Stream = srv.URL+"/v1/chat/completions", "test-model", true
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err := o.Run(ctx, nil, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rate %v: Run error = %v, want one wrapping context.DeadlineExceeded", o.Rate, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("rate %v: Run took %v after its context ended", o.Rate, d)
		}
	}
}

func TestOpenAIInvalidConfig(t *testing.T) {
	tests := []struct {
		o    loads.OpenAI
		want string
	}{
		{loads.OpenAI{}, "url is empty"},
		{loads.OpenAI{URL: "http://x/v1/embeddings"}, "path must end in /chat/completions or /completions"},
		{loads.OpenAI{URL: "http://x/v1/completions", Expect: "("}, "expect is not a regular expression"},
		{loads.OpenAI{URL: "http://x/v1/completions", PromptTokens: 5, Dataset: "p.jsonl"}, "a dataset brings its own"},
		{loads.OpenAI{URL: "http://x/v1/completions", Rate: -2}, "rate -2"},
		{loads.OpenAI{URL: "http://x/v1/completions", Dataset: "/nonexistent.jsonl"}, "nonexistent.jsonl"},
	}
	for _, tt := range tests {
		_, err := tt.o.Run(context.Background(), nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v) error = %v, want it to say %q", tt.o, err, tt.want)
		}
	}
}

// A server that closes a kept-alive connection once the next request on
// it has arrived, without answering, as llama-server's HTTP library does:
// the request is sent again on a new connection, and each time is
// counted in resent, never hidden.
func TestOpenAIServerClosesIdleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				body := `{"choices":[{"text":"Paris"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				// Keep-alive was not refused: the client keeps the
				// connection; close it once its next request comes.
				br.Peek(1)
			}(c)
		}
	}()
	res := runOpenAI(t, loads.OpenAI{URL: "http://" + ln.Addr().String() + "/v1/completions", Model: "m", Concurrency: 1, Requests: 5})
	// Each connection answers one request and drops the next, which is
	// sent again on a new one: requests 2 to 5 once each.
	exactly(t, res.Metrics, "errors", 0)
	exactly(t, res.Metrics, "completed", 5)
	exactly(t, res.Metrics, "resent", 4)
	if n := conns.Load(); n != 5 {
		t.Errorf("%d connections for 5 requests, want 5", n)
	}
}

// A conversation of several turns sends, at each turn, the history so
// far with the server's own answers in it, through one worker.
func TestOpenAIMultiTurnSendsTheAnswers(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 3, Usage: true, Answer: "the answer was here"})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Turns: 3, Prompts: 1, PromptTokens: 4, Requests: 3, Concurrency: 1, Seed: 1})
	exactly(t, res.Metrics, "completed", 3)
	got := srv.Prompts()
	if len(got) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(got))
	}
	first := got[0]
	if strings.Contains(first, "the answer") {
		t.Fatalf("the first turn already holds an answer: %q", first)
	}
	for i := 1; i < 3; i++ {
		if !strings.HasPrefix(got[i], got[i-1]) {
			t.Errorf("turn %d does not repeat the history %q: %q", i+1, got[i-1], got[i])
		}
		if n := strings.Count(got[i], "the answer was"); n != i {
			t.Errorf("turn %d holds %d answers, want %d: %q", i+1, n, i, got[i])
		}
	}
	if res.Notes["turns"] != "3" {
		t.Errorf("notes %v: no turns", res.Notes)
	}
}
