package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OpenAIConfig fixes how the OpenAI-style server answers.
type OpenAIConfig struct {
	Model string // served model name (default "test-model"); others get 404
	// Token timing: the first token TTFT after the request arrives, then
	// one every ITL; Tokens per answer (capped by the request's
	// max_tokens). A stream sends one token per event.
	TTFT, ITL time.Duration
	Tokens    int
	// Usage: report token usage (in a stream, only when the request asks
	// with stream_options.include_usage, as OpenAI does). prompt_tokens is
	// the number of words in the prompt.
	Usage bool
	// Answer is what the model says, one word a token, repeated to fill
	// Tokens (default "The answer is 4.").
	Answer string
	// Reasoning: a chat answer comes as reasoning_content with an empty
	// content, as reasoning models' servers send their thinking.
	Reasoning bool
	// GarbageEvery N: every Nth request answers "zq" tokens instead.
	GarbageEvery int
	// FailEvery N: every Nth request gets HTTP 500.
	FailEvery int
	// SlowEvery N: every Nth request waits SlowTTFT for its first token.
	SlowEvery int
	SlowTTFT  time.Duration
	// Gate N: no request gets its first token before N requests have been
	// in flight at once (or GateTimeout, default 30s, has passed), so a
	// test can tell that a client really holds N requests open.
	Gate        int
	GateTimeout time.Duration
	// Forget: keep no request's body or prompt (Bodies and Prompts are
	// empty), so that a long run's memory is the client's.
	Forget bool
}

// OpenAI serves /v1/chat/completions, /v1/completions and /v1/models with
// known token timings.
type OpenAI struct {
	URL string // http://127.0.0.1:PORT; endpoints under /v1
	// Dial is the way to the server: nil for one on a port, Pipe.Dial for
	// one from NewOpenAIPiped.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	cfg      OpenAIConfig
	close    func()
	requests atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64

	gate     chan struct{} // closed once Gate requests are in flight
	openGate func()

	mu      sync.Mutex
	bodies  []map[string]any
	prompts []string
}

// NewOpenAI starts a server on 127.0.0.1; Close stops it.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	s := newOpenAI(cfg)
	srv := httptest.NewServer(s.handler())
	s.URL, s.close = srv.URL, srv.Close
	return s
}

// NewOpenAIPiped starts a server on in-memory connections (see Pipe), for
// tests whose timings run on testing/synctest's clock: a load reaches it
// through Dial, whatever host URL names. Close stops it.
func NewOpenAIPiped(cfg OpenAIConfig) *OpenAI {
	s := newOpenAI(cfg)
	p := NewPipe(s.handler())
	s.URL, s.Dial, s.close = "http://openai.pipe", p.Dial, p.Close
	return s
}

func newOpenAI(cfg OpenAIConfig) *OpenAI {
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.Answer == "" {
		cfg.Answer = "The answer is 4."
	}
	if cfg.GateTimeout == 0 {
		cfg.GateTimeout = 30 * time.Second
	}
	s := &OpenAI{cfg: cfg, gate: make(chan struct{})}
	s.openGate = sync.OnceFunc(func() { close(s.gate) })
	if cfg.Gate <= 0 {
		s.openGate()
	}
	return s
}

// handler routes the endpoints.
func (s *OpenAI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, s.cfg.Model)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	return mux
}

// Close stops the server.
func (s *OpenAI) Close() { s.close() }

// Requests is the number of completion requests received.
func (s *OpenAI) Requests() int64 { return s.requests.Load() }

// MaxInFlight is the largest number of completion requests that were
// being answered at once.
func (s *OpenAI) MaxInFlight() int64 { return s.maxIn.Load() }

// Bodies returns the JSON bodies of the completion requests, in order of
// arrival.
func (s *OpenAI) Bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// Prompts returns each request's prompt text (a chat's message contents
// joined by newlines), in order of arrival.
func (s *OpenAI) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prompts...)
}

type completionRequest struct {
	Model    string `json:"model"`
	Prompt   string `json:"prompt"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *OpenAI) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	arrived := time.Now()
	n := s.requests.Add(1)
	in := s.inFlight.Add(1)
	// A request stops counting as in flight before its last bytes go out:
	// a client may send its next request as soon as it has read them.
	finished := sync.OnceFunc(func() { s.inFlight.Add(-1) })
	defer finished()
	for {
		m := s.maxIn.Load()
		if in <= m || s.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	if s.cfg.Gate > 0 && in >= int64(s.cfg.Gate) {
		s.openGate()
	}
	var raw map[string]any
	var req completionRequest
	dec := json.NewDecoder(r.Body)
	var buf json.RawMessage
	if err := dec.Decode(&buf); err != nil || json.Unmarshal(buf, &raw) != nil || json.Unmarshal(buf, &req) != nil {
		http.Error(w, `{"error":{"message":"invalid JSON"}}`, http.StatusBadRequest)
		return
	}
	prompt := req.Prompt
	if chat {
		parts := make([]string, len(req.Messages))
		for i, m := range req.Messages {
			parts[i] = m.Content
		}
		prompt = strings.Join(parts, "\n")
	}
	s.mu.Lock()
	if !s.cfg.Forget {
		s.bodies = append(s.bodies, raw)
		s.prompts = append(s.prompts, prompt)
	}
	s.mu.Unlock()

	if req.Model != s.cfg.Model {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"model %q does not exist"}}`, req.Model)
		return
	}
	if s.cfg.FailEvery > 0 && n%int64(s.cfg.FailEvery) == 0 {
		http.Error(w, `{"error":{"message":"injected failure"}}`, http.StatusInternalServerError)
		return
	}
	tokens := s.cfg.Tokens
	if req.MaxTokens > 0 && req.MaxTokens < tokens {
		tokens = req.MaxTokens
	}
	words := strings.Fields(s.cfg.Answer)
	if s.cfg.GarbageEvery > 0 && n%int64(s.cfg.GarbageEvery) == 0 {
		words = []string{"zq"}
	}
	token := func(k int) string {
		if k == 0 {
			return words[0]
		}
		return " " + words[k%len(words)]
	}
	ttft := s.cfg.TTFT
	if s.cfg.SlowEvery > 0 && n%int64(s.cfg.SlowEvery) == 0 {
		ttft = s.cfg.SlowTTFT
	}
	// Token k is due at arrival + ttft + k*ITL whatever the writes cost,
	// so totals (e2e, mean ITL) stay true on a loaded machine; a token
	// written late shortens the interval to the next one.
	due := func(k int) time.Time { return arrived.Add(ttft + time.Duration(k)*s.cfg.ITL) }
	usage := map[string]int{
		"prompt_tokens":     len(strings.Fields(prompt)),
		"completion_tokens": tokens,
		"total_tokens":      len(strings.Fields(prompt)) + tokens,
	}
	ctx := r.Context()
	select {
	case <-s.gate:
	case <-time.After(s.cfg.GateTimeout):
	case <-ctx.Done():
		return
	}
	arrived = time.Now() // token times run from the gate

	if !req.Stream {
		if tokens > 0 && !sleep(ctx, time.Until(due(tokens-1))) {
			return
		}
		var text strings.Builder
		for k := range tokens {
			text.WriteString(token(k))
		}
		resp := map[string]any{"id": "cmpl-test", "model": s.cfg.Model}
		if chat {
			resp["object"] = "chat.completion"
			resp["choices"] = []any{map[string]any{"index": 0, "finish_reason": "length",
				"message": map[string]any{"role": "assistant", s.textKey(): text.String()}}}
		} else {
			resp["object"] = "text_completion"
			resp["choices"] = []any{map[string]any{"index": 0, "finish_reason": "length", "text": text.String()}}
		}
		if s.cfg.Usage {
			resp["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		finished()
		json.NewEncoder(w).Encode(resp)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher := w.(http.Flusher)
	event := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
	}
	choice := func(text string, finish any) map[string]any {
		if chat {
			delta := map[string]any{}
			if text != "" {
				delta[s.textKey()] = text
			}
			return map[string]any{"index": 0, "delta": delta, "finish_reason": finish}
		}
		return map[string]any{"index": 0, "text": text, "finish_reason": finish}
	}
	if chat { // vLLM and SGLang open with a role-only delta: not a token
		event(map[string]any{"id": "cmpl-test", "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}}}})
	}
	fmt.Fprint(w, ": keep-alive comment, ignored by clients\n\n")
	for k := range tokens {
		if !sleep(ctx, time.Until(due(k))) {
			return
		}
		event(map[string]any{"id": "cmpl-test", "choices": []any{choice(token(k), nil)}})
	}
	event(map[string]any{"id": "cmpl-test", "choices": []any{choice("", "length")}})
	if s.cfg.Usage && req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		event(map[string]any{"id": "cmpl-test", "choices": []any{}, "usage": usage})
	}
	finished()
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
}

// textKey is the field of a chat message or delta that carries the answer.
func (s *OpenAI) textKey() string {
	if s.cfg.Reasoning {
		return "reasoning_content"
	}
	return "content"
}
