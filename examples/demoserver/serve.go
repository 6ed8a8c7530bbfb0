package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// logger writes whole lines, one write each, so a log follower never sees
// half a line and lines from concurrent requests never interleave.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

func (l *logger) printf(format string, args ...any) {
	line := fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, line)
}

// server is the HTTP side: bound only after loading, 503 until warm.
type server struct {
	cfg     config
	backend string
	log     *logger
	ln      net.Listener
	http    *http.Server
	ready   atomic.Bool
	nextID  atomic.Int64
	crash   sync.Once
	crashed chan struct{} // closed by the first completion under --crash-on-request
	slots   chan struct{} // --slots: one held per answer being generated; nil: no limit
	failed  chan error    // Serve returned for a reason other than shutdown
}

func listen(cfg config, backend string, log *logger) (*server, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		return nil, err
	}
	s := &server{
		cfg:     cfg,
		backend: backend,
		log:     log,
		ln:      ln,
		crashed: make(chan struct{}),
		failed:  make(chan error, 1),
	}
	if cfg.slots > 0 {
		s.slots = make(chan struct{}, cfg.slots)
	}
	// Like llama-server (cpp-httplib's 5 s keep-alive), close a kept-alive
	// connection left idle: a client must cope with a close that races
	// its next request.
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.failed <- err
		}
	}()
	return s, nil
}

func (s *server) addr() string { return s.ln.Addr().String() }
func (s *server) port() int    { return s.ln.Addr().(*net.TCPAddr).Port }
func (s *server) setReady()    { s.ready.Store(true) }
func (s *server) close()       { s.http.Close() }

// shutdown lets requests in flight finish for up to grace, then cuts them.
func (s *server) shutdown(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	// The root sends a browser to the health page, as servers send / to
	// their docs or a login: a probe of / sees the 302, not /health's
	// answer, unless it follows redirects.
	mux.Handle("GET /{$}", http.RedirectHandler("/health", http.StatusFound))
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.completion(true))
	mux.HandleFunc("POST /v1/completions", s.completion(false))
	return mux
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "warming up", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok")
}

func (s *server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id":       s.cfg.model,
			"object":   "model",
			"created":  time.Now().Unix(),
			"owned_by": "demoserver",
			"root":     s.cfg.model,
		}},
	})
}

// request is the part of an OpenAI request the demo reads.
type request struct {
	Model         string    `json:"model"`
	Messages      []message `json:"messages"`
	Prompt        any       `json:"prompt"` // string or list of strings
	MaxTokens     *int      `json:"max_tokens"`
	MaxCompletion *int      `json:"max_completion_tokens"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// IgnoreEOS makes the answer run to max_tokens, as benchmark clients
	// ask of SGLang and vLLM to get a fixed output length.
	IgnoreEOS bool `json:"ignore_eos"`
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or list of {type, text} parts
}

func (s *server) completion(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeError(w, http.StatusServiceUnavailable, "the server is warming up")
			return
		}
		var req request
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20))
		if err := dec.Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
			return
		}
		question, promptWords, err := req.question(chat)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if s.cfg.crashOnRequest {
			// The fault: healthy until the first decode, then the process
			// dies; the client sees its connection drop, never an answer.
			s.crash.Do(func() { close(s.crashed) })
			<-r.Context().Done()
			return
		}
		if s.slots != nil {
			// A server at capacity queues the request: its first token
			// waits for a slot, as a real server's batch is full.
			select {
			case s.slots <- struct{}{}:
				defer func() { <-s.slots }()
			case <-r.Context().Done():
				return
			}
		}
		tokens, finish := s.answer(question, req)
		usage := map[string]int{
			"prompt_tokens":     promptWords,
			"completion_tokens": len(tokens),
			"total_tokens":      promptWords + len(tokens),
		}
		id := fmt.Sprintf("cmpl-%d", s.nextID.Add(1))
		model := s.cfg.model
		if req.Stream {
			s.stream(w, r, chat, id, model, tokens, finish, usage, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
			return
		}
		if !s.generate(r.Context(), len(tokens)) {
			return
		}
		text := strings.Join(tokens, "")
		var choice map[string]any
		object := "text_completion"
		if chat {
			object = "chat.completion"
			choice = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": finish}
		} else {
			choice = map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id":      id,
			"object":  object,
			"created": time.Now().Unix(),
			"model":   model,
			"choices": []any{choice},
			"usage":   usage,
		})
	}
}

// generate spends --token-delay per token; false if the client left.
func (s *server) generate(ctx context.Context, n int) bool {
	if s.cfg.tokenDelay <= 0 || n == 0 {
		return true
	}
	t := time.NewTimer(s.cfg.tokenDelay * time.Duration(n))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stream writes the answer as server-sent events, one token a chunk, the
// way OpenAI's API does: a role chunk, content chunks, a chunk with the
// finish reason, the usage chunk (empty choices) when asked, then [DONE].
func (s *server) stream(w http.ResponseWriter, r *http.Request, chat bool, id, model string, tokens []string, finish string, usage map[string]int, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	created := time.Now().Unix()
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(text string, finish any) map[string]any {
		choice := map[string]any{"index": 0, "finish_reason": finish}
		if chat {
			choice["delta"] = map[string]any{"content": text}
		} else {
			choice["text"] = text
			choice["logprobs"] = nil
		}
		return map[string]any{"id": id, "object": object, "created": created, "model": model, "choices": []any{choice}}
	}
	if chat {
		first := chunk("", nil)
		first["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"role": "assistant", "content": ""}
		send(first)
	}
	for _, tok := range tokens {
		if !s.generate(r.Context(), 1) {
			return
		}
		send(chunk(tok, nil))
	}
	end := chunk("", finish)
	if chat {
		end["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{}
	}
	send(end)
	if includeUsage {
		send(map[string]any{"id": id, "object": object, "created": created, "model": model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// question is the text the answer depends on (the last user message, or
// the prompt) and the prompt's size in words, the demo's tokens.
func (req request) question(chat bool) (string, int, error) {
	if chat {
		if len(req.Messages) == 0 {
			return "", 0, errors.New("messages must not be empty")
		}
		words, last := 0, ""
		for _, m := range req.Messages {
			text := contentText(m.Content)
			words += len(strings.Fields(text))
			if m.Role == "user" {
				last = text
			}
		}
		return last, max(words, 1), nil
	}
	var text string
	switch p := req.Prompt.(type) {
	case string:
		text = p
	case []any:
		var parts []string
		for _, e := range p {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			}
		}
		text = strings.Join(parts, "\n")
	case nil:
		return "", 0, errors.New("prompt is required")
	default:
		return "", 0, errors.New("prompt must be a string or a list of strings")
	}
	return text, max(len(strings.Fields(text)), 1), nil
}

func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// sentences are the answers to anything but 2+2, chosen by a hash of the
// question so the same question always gets the same answer.
var sentences = [...]string{
	"The quick brown fox jumps over the lazy dog.",
	"Paris is the capital of France.",
	"Water boils at 100 degrees Celsius at sea level.",
	"A week has seven days.",
}

// answer returns the answer as tokens (words, each but the first with its
// leading space, so joining them gives the text) and the finish reason.
func (s *server) answer(question string, req request) ([]string, string) {
	var text string
	switch {
	case s.cfg.nan:
		// What a server gives when its logits are NaN: a well-formed,
		// successful response whose content is garbage.
		text = "NaN NaN NaN"
	case strings.Contains(question, "2+2"):
		text = "2+2 = 4."
	default:
		h := fnv.New32a()
		io.WriteString(h, question)
		text = sentences[h.Sum32()%uint32(len(sentences))]
	}
	words := strings.Fields(text)
	limit := -1
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	}
	if req.MaxCompletion != nil {
		limit = *req.MaxCompletion
	}
	finish := "stop"
	if req.IgnoreEOS && limit > len(words) {
		base := words
		words = make([]string, limit)
		for i := range words {
			words[i] = base[i%len(base)]
		}
		finish = "length"
	}
	if limit >= 0 && len(words) > limit {
		words, finish = words[:limit], "length"
	}
	tokens := make([]string, len(words))
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		tokens[i] = w
	}
	return tokens, finish
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers in the OpenAI error shape, which clients parse.
func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}
