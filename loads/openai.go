package loads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OpenAI is a load of requests to an OpenAI-compatible server:
// /v1/chat/completions or /v1/completions, as URL's path ends.
//
// With Rate == 0 the model is closed: Concurrency requests are in flight
// at all times (default 1). With Rate > 0 requests arrive as a Poisson
// process of that rate (seeded by Seed), and Concurrency, when set, caps
// those in flight, as bench_serving's --request-rate and --max-concurrency
// do; a request's times run from when it is sent.
//
// The run sends Requests requests, or sends for Duration, whichever ends
// first (neither: 1000 requests, bench_serving's default); requests in
// flight then finish and count. Warmup, when set, runs the same load for
// that long first, waits for it to finish, and counts none of it.
//
// Prompts are synthetic, PromptTokens words (default 128) that are one
// token each in common tokenizers, the same for the same Seed; or the
// lines of PromptsFile (JSONL: {"prompt": "..."} or {"messages": [...]}).
// The request body is {model, messages | prompt, max_tokens, stream,
// stream_options: {include_usage: true} when streaming} with ExtraBody
// merged over it (a null value removes a key). An empty Model is read
// from the server's /v1/models.
type OpenAI struct {
	URL, Model   string
	Stream       bool
	Concurrency  int
	Rate         float64
	Requests     int
	Duration     time.Duration
	Warmup       time.Duration
	PromptTokens int
	PromptsFile  string
	MaxTokens    int   // default 128
	Seed         int64 // prompts and arrivals
	Expect       string
	// A request meets the service-level objective (goodput) when its TTFT
	// and TPOT are within these limits; zero means no limit.
	TTFTLimit, TPOTLimit time.Duration
	ExtraBody            map[string]any
	Headers              map[string]string
	KeepRequests         bool
	Timeout              time.Duration // per request (default 10m)
}

const (
	defaultOpenAIRequests = 1000
	defaultPromptTokens   = 128
	defaultMaxTokens      = 128
	defaultOpenAITimeout  = 10 * time.Minute
	// warmupBase offsets warm-up prompts so the measured ones are the same
	// with or without a warm-up.
	warmupBase = 1 << 30
)

type openaiRun struct {
	o       OpenAI
	chat    bool
	client  *http.Client
	prompts prompts
	expect  *regexp.Regexp

	done, errs atomic.Int64 // measured phase, for progress
	phaseStart time.Time
	phaseEnd   time.Time
	measuring  atomic.Bool
}

// Run runs the load through dial (nil: this machine's network) and returns
// the metrics of SGLang's bench_serving and vLLM's benchmark_serving under
// their definitions (see README in this package or the report): completed,
// errors, requests_per_s, input/output/total_tokens_per_s, ttft_*, tpot_*,
// itl_*, e2e_latency_* (mean, median, p99, in ms), achieved_concurrency,
// goodput_requests_per_s, goodput_share, answers_matching_share (with
// Expect), input_tokens, output_tokens, duration_s.
func (o OpenAI) Run(ctx context.Context, dial Dialer, progress func(Progress)) (Result, error) {
	r, err := o.prepare(dial)
	if err != nil {
		return Result{}, fmt.Errorf("openai load: %w", err)
	}
	defer r.client.CloseIdleConnections()
	if r.o.Model == "" {
		if r.o.Model, err = r.discoverModel(ctx); err != nil {
			return Result{}, fmt.Errorf("openai load: %w", err)
		}
	}
	if r.o.Warmup > 0 {
		r.phase(ctx, warmupBase, 0, r.o.Warmup)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("openai load interrupted in warm-up: %w", err)
		}
	}
	stop := reportProgress(ctx, progress, r.progress)
	r.phaseStart = time.Now()
	r.measuring.Store(true)
	outs := r.phase(ctx, 0, r.o.Requests, r.o.Duration)
	r.phaseEnd = time.Now()
	stop()
	res := r.result(outs)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("openai load interrupted: %w", err)
	}
	return res, nil
}

func (o OpenAI) prepare(dial Dialer) (*openaiRun, error) {
	var errs []error
	u, err := url.Parse(o.URL)
	chat := false
	switch {
	case o.URL == "":
		errs = append(errs, errors.New("url is empty"))
	case err != nil:
		errs = append(errs, fmt.Errorf("parse url: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url %q: scheme must be http or https", o.URL))
	case strings.HasSuffix(u.Path, "/chat/completions"):
		chat = true
	case strings.HasSuffix(u.Path, "/completions"):
	default:
		errs = append(errs, fmt.Errorf("url %q: path must end in /chat/completions or /completions", o.URL))
	}
	if o.Concurrency < 0 || o.Requests < 0 || o.Duration < 0 || o.Warmup < 0 || o.PromptTokens < 0 ||
		o.MaxTokens < 0 || o.TTFTLimit < 0 || o.TPOTLimit < 0 || o.Timeout < 0 {
		errs = append(errs, errors.New("concurrency, requests, durations, token counts and limits must not be negative"))
	}
	if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate %v: must be a positive number of requests per second, or 0 for a closed model", o.Rate))
	}
	if o.PromptsFile != "" && o.PromptTokens > 0 {
		errs = append(errs, errors.New("prompt_tokens and prompts_file exclude each other"))
	}
	r := &openaiRun{chat: chat}
	if o.Expect != "" {
		if r.expect, err = regexp.Compile(o.Expect); err != nil {
			errs = append(errs, fmt.Errorf("expect: %w", err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if o.Concurrency == 0 && o.Rate == 0 {
		o.Concurrency = 1
	}
	if o.Requests == 0 && o.Duration == 0 {
		o.Requests = defaultOpenAIRequests
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = defaultMaxTokens
	}
	if o.Timeout == 0 {
		o.Timeout = defaultOpenAITimeout
	}
	if o.PromptsFile != "" {
		p, err := readPrompts(o.PromptsFile, chat)
		if err != nil {
			return nil, err
		}
		r.prompts = p
	} else {
		if o.PromptTokens == 0 {
			o.PromptTokens = defaultPromptTokens
		}
		r.prompts = synthetic{words: o.PromptTokens, seed: o.Seed}
	}
	r.o = o
	conns := o.Concurrency
	if conns == 0 {
		conns = 1024
	}
	r.client = &http.Client{Transport: &http.Transport{
		DialContext:         dial.orDefault(),
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		// Servers close kept-alive connections they think idle: uvicorn
		// (vLLM, SGLang) and llama-server after 5 s. A request written on
		// one as it closes is lost, and is counted so: it is never sent
		// again, since nothing tells a request the server never read from
		// one it took and then crashed on (a non-streamed answer sends no
		// byte until it is done). Closing ours first, below those 5 s,
		// keeps the race away from the servers people run.
		IdleConnTimeout:    idleConnTimeout,
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}}
	return r, nil
}

// discoverModel asks the server which model it serves, as a user of
// bench_serving would by reading /v1/models.
// idleConnTimeout is how long the load keeps an idle connection: below
// the 5 s keep-alive of the common servers.
const idleConnTimeout = 4 * time.Second

func (r *openaiRun) discoverModel(ctx context.Context) (string, error) {
	u, _ := url.Parse(r.o.URL)
	i := strings.LastIndex(u.Path, "/completions")
	if r.chat {
		i = strings.LastIndex(u.Path, "/chat/completions")
	}
	u.Path = u.Path[:i] + "/models"
	u.RawQuery = ""
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return "", err
	}
	for k, v := range r.o.Headers {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("no model given, and asking the server failed: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &models) != nil || len(models.Data) == 0 || models.Data[0].ID == "" {
		return "", fmt.Errorf("no model given, and GET %s did not name one (HTTP %d: %.200s)", u, resp.StatusCode, body)
	}
	return models.Data[0].ID, nil
}

// outcome is what one request observed.
type outcome struct {
	start       time.Time
	status      int
	err         error
	ttft, e2e   time.Duration
	itl         []time.Duration
	inTokens    int
	outTokens   int
	tokenSource string // usage, stream (chunks counted) or words
	answer      string
	resent      int // times sent again on a new connection (see do)
}

// phase sends requests first, first+1, ... until n are sent (0: no limit)
// or d has passed (0: no limit), and returns once all have ended.
func (r *openaiRun) phase(ctx context.Context, first, n int, d time.Duration) []outcome {
	start := time.Now()
	var mu sync.Mutex
	var outs []outcome
	var next atomic.Int64
	// take reserves the next request's index; false: send no more.
	take := func() (int, bool) {
		if d > 0 && time.Since(start) >= d || ctx.Err() != nil {
			return 0, false
		}
		i := int(next.Add(1) - 1)
		if n > 0 && i >= n {
			return 0, false
		}
		return i, true
	}
	send := func(i int) {
		out := r.do(ctx, first+i)
		if ctx.Err() != nil {
			return // cut short by the caller: not a result
		}
		if r.measuring.Load() {
			r.done.Add(1)
			if out.err != nil {
				r.errs.Add(1)
			}
		}
		mu.Lock()
		outs = append(outs, out)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	if r.o.Rate == 0 {
		for range r.o.Concurrency {
			wg.Go(func() {
				for {
					i, ok := take()
					if !ok {
						return
					}
					send(i)
				}
			})
		}
		wg.Wait()
		return outs
	}
	var slots chan struct{}
	if r.o.Concurrency > 0 {
		slots = make(chan struct{}, r.o.Concurrency)
	}
	rng := rand.New(rand.NewPCG(uint64(r.o.Seed), uint64(first)+1))
	due := start
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		i, ok := take()
		if !ok {
			break
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				continue // take ends the loop
			}
		}
		wg.Go(func() {
			send(i)
			if slots != nil {
				<-slots
			}
		})
		due = due.Add(time.Duration(rng.ExpFloat64() / r.o.Rate * float64(time.Second)))
		if w := time.Until(due); w > 0 {
			timer.Reset(w)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
	}
	wg.Wait()
	return outs
}

// body builds request i's JSON.
func (r *openaiRun) body(p prompt) ([]byte, error) {
	b := map[string]any{
		"model":      r.o.Model,
		"max_tokens": r.o.MaxTokens,
		"stream":     r.o.Stream,
	}
	if r.o.Stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	switch {
	case len(p.messages) > 0:
		b["messages"] = p.messages
	case r.chat:
		b["messages"] = []map[string]string{{"role": "user", "content": p.text}}
	default:
		b["prompt"] = p.text
	}
	for k, v := range r.o.ExtraBody {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return json.Marshal(b)
}

// chunk is the part of a response (or of one streamed event) that counts.
type chunk struct {
	Choices []struct {
		Text    string `json:"text"`
		Message *struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"message"`
		Delta *struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// text returns the answer text and reasoning text the chunk carries.
func (c *chunk) text() (answer, reasoning string) {
	for _, ch := range c.Choices {
		answer += ch.Text
		if ch.Message != nil {
			answer += ch.Message.Content
			reasoning += ch.Message.ReasoningContent
		}
		if ch.Delta != nil {
			answer += ch.Delta.Content
			reasoning += ch.Delta.ReasoningContent
		}
	}
	return answer, reasoning
}

func (r *openaiRun) do(ctx context.Context, i int) outcome {
	p := r.prompts.at(i)
	out := outcome{inTokens: p.tokens}
	body, err := r.body(p)
	if err != nil {
		out.err = fmt.Errorf("encode request: %w", err)
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", r.o.URL, bytes.NewReader(body))
	if err != nil {
		out.err = err
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	// Servers close kept-alive connections under the client (llama-server,
	// whose HTTP library closes them as it pleases, and uvicorn after 5 s
	// idle): a request written on one as it closes gets an EOF with nothing
	// read. Marked replayable (the header itself is not sent: a nil
	// value), Go's transport sends it again on a new connection, only when
	// nothing came back and only from a reused connection. That is not
	// hidden: each time is counted in resent, and the trace below sees it.
	req.Header["X-Idempotency-Key"] = nil
	conns := 0
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { conns++ }}))
	if r.o.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range r.o.Headers {
		req.Header.Set(k, v)
	}
	out.start = time.Now()
	resp, err := r.client.Do(req)
	out.resent = max(conns-1, 0)
	if err != nil {
		out.err = err
		return out
	}
	defer resp.Body.Close()
	out.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		out.err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
		return out
	}
	var answer, reasoning strings.Builder
	if r.o.Stream {
		out.err = r.readStream(resp.Body, &out, &answer, &reasoning)
	} else {
		out.err = r.readWhole(resp.Body, &out, &answer, &reasoning)
	}
	out.answer = answer.String()
	if out.answer == "" {
		out.answer = reasoning.String()
	}
	return out
}

func (r *openaiRun) readWhole(body io.Reader, out *outcome, answer, reasoning *strings.Builder) error {
	data, err := io.ReadAll(body)
	out.e2e = time.Since(out.start)
	out.ttft = out.e2e // as bench_serving: without a stream the first token comes with the last
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("response is not JSON: %w: %.200s", err, data)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("server error: %s", c.Error)
	}
	a, rs := c.text()
	answer.WriteString(a)
	reasoning.WriteString(rs)
	if c.Usage != nil {
		out.tokenSource = "usage"
		out.inTokens, out.outTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	} else {
		out.outTokens = len(strings.Fields(a + " " + rs))
		out.tokenSource = "words"
	}
	return nil
}

// readStream reads server-sent events: "data: {...}" lines, then
// "data: [DONE]". A chunk with text is a token arrival (TTFT for the first,
// an inter-token latency for the others, as bench_serving counts them);
// the end-to-end latency runs to [DONE].
func (r *openaiRun) readStream(body io.Reader, out *outcome, answer, reasoning *strings.Builder) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 16<<10), 16<<20)
	var last time.Time
	chunks := 0
	for sc.Scan() {
		line := sc.Bytes()
		payload, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank separators, comments (":"), event: and id: fields
		}
		payload = bytes.TrimSpace(payload)
		now := time.Now()
		if string(payload) == "[DONE]" {
			out.e2e = now.Sub(out.start)
			if out.tokenSource == "" {
				out.outTokens = chunks
				out.tokenSource = "stream"
			}
			return nil
		}
		var c chunk
		if err := json.Unmarshal(payload, &c); err != nil {
			return fmt.Errorf("stream event is not JSON: %w: %.200s", err, payload)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return fmt.Errorf("server error in stream: %s", c.Error)
		}
		if c.Usage != nil {
			out.tokenSource = "usage"
			out.inTokens, out.outTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
		a, rs := c.text()
		if a == "" && rs == "" {
			continue // a role-only first delta, a finish or usage event: no token
		}
		answer.WriteString(a)
		reasoning.WriteString(rs)
		chunks++
		if chunks == 1 {
			out.ttft = now.Sub(out.start)
		} else {
			out.itl = append(out.itl, now.Sub(last))
		}
		last = now
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	return errors.New("stream ended without data: [DONE]")
}

func (r *openaiRun) progress() Progress {
	var el time.Duration
	if r.measuring.Load() {
		el = time.Since(r.phaseStart)
	}
	p := Progress{Done: r.done.Load(), Errors: r.errs.Load(), Elapsed: el}
	if el > 0 {
		p.Rate = float64(p.Done) / el.Seconds()
	}
	return p
}
