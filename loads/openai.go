package loads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/schema"
	"lockstep/workloads"
)

// OpenAI is the load "openai": requests to an OpenAI-compatible server,
// /v1/chat/completions or /v1/completions as URL's path ends, on the
// engine's closed model (Rate 0: Concurrency requests in flight at all
// times) or open model (Rate arrivals per second as a Poisson process
// seeded by Seed, as bench_serving's --request-rate; see engine).
// Request times (ttft, e2e_latency) run from the send in the closed
// model and from the intended send in the open one.
//
// The run measures Requests requests, or for Duration, whichever ends
// first (neither: 1000 requests, bench_serving's default); requests in
// flight then finish and count. Warmup runs the same load for that long
// first, and counts none of it.
//
// What is sent comes from package workloads: generated prompts
// (PromptTokens words, about a token each, the same for the same Seed,
// optionally behind a shared prefix), or a Dataset (ShareGPT JSON or
// JSONL, with per-prompt output lengths); a conversation of several Turns
// sends the history so far, the server's own answers included, each
// turn after the last was answered, through one worker.
// The request body is {model, messages | prompt, max_tokens, stream,
// stream_options: {include_usage: true} when streaming} with ExtraBody
// merged over it (a null value removes a key). An empty Model is read
// from the server's /v1/models.
//
// A Go caller may leave fields zero: Run takes them from OpenAIDefaults.
type OpenAI struct {
	URL    string `hcl:"url,required" doc:"completions or chat completions URL; 127.0.0.1 is the target's loopback"`
	Model  string `hcl:"model" doc:"model name sent in each request" default:"the first model the server's /v1/models names"`
	Stream bool   `hcl:"stream" doc:"stream responses (needed for tpot and itl)"`
	// Concurrencies and Rates are the plan's concurrency and rate: one
	// number each, the level Concurrency and Rate hold, or a list, a
	// sweep (RunLevels); a goodput search reads Rates as its bounds.
	Concurrencies Levels        `hcl:"concurrency" doc:"requests in flight at once (closed model), or at most (open model); a list, such as [1, 8, 64], sweeps them"`
	Rates         Levels        `hcl:"rate" doc:"arrivals per second, a Poisson process (open model); a list sweeps them, and with goodput_target, [LOW, HIGH] bounds the search; unset: each request sent when one ends"`
	Requests      int           `hcl:"requests" doc:"how many requests to measure" default:"1000, when duration is unset"`
	Duration      time.Duration `hcl:"duration" doc:"how long to measure, after the warm-up"`
	Warmup        time.Duration `hcl:"warmup" doc:"how long to send requests before measuring, not counted (a duration)"`
	Ramp          time.Duration `hcl:"ramp" doc:"how long the load grows to its level before the warm-up, not counted: requests start one by one (closed model), the rate grows linearly from 0 (open model)"`
	PromptTokens  int           `hcl:"prompt_tokens" doc:"words in each generated prompt, about one token each" default:"128, without a dataset"`
	Dataset       string        `hcl:"dataset" doc:"prompts from a file: ShareGPT JSON, or JSON lines of {\"prompt\"}, {\"messages\"}, {\"conversations\"} or {\"input_tokens\"}, each with an optional output_tokens" default:"none: generated prompts"`
	// DatasetFormat, SharedPrefixTokens, PrefixGroups, Prompts and Turns
	// are workloads.Config's: see that package.
	DatasetFormat      string `hcl:"dataset_format" doc:"the dataset's format: sharegpt or jsonl" default:"told from the file's first byte"`
	SharedPrefixTokens int    `hcl:"shared_prefix_tokens" doc:"every generated prompt starts with the same prefix of this many tokens, to see a server's prefix cache"`
	PrefixGroups       int    `hcl:"prefix_groups" doc:"distinct shared prefixes: conversation i has prefix i mod prefix_groups" default:"1, with shared_prefix_tokens"`
	Prompts            int    `hcl:"prompts" doc:"distinct conversations: generated ones repeat after this many; a dataset's are sampled to it (seeded)" default:"every one"`
	Turns              int    `hcl:"turns" doc:"user turns a conversation sends, each with the history so far and the server's answers (needs /v1/chat/completions)" default:"1"`
	MaxTokens          int    `hcl:"max_tokens" doc:"max_tokens sent in each request"`
	Seed               int64  `hcl:"seed" doc:"seed for generated prompts and Poisson arrivals"`
	Expect             string `hcl:"expect" doc:"regular expression answers are matched against (answers_matching_share)"`
	// A request meets the service-level objective (goodput) when its TTFT
	// and TPOT are within these limits, in ms; zero means no limit.
	TTFTLimitMS float64 `hcl:"ttft_limit_ms" doc:"goodput: a request whose first token takes longer (ms) is not good"`
	TPOTLimitMS float64 `hcl:"tpot_limit_ms" doc:"goodput: a request whose time per output token is longer (ms) is not good"`
	// GoodputTarget, SearchProbes and SearchTolerance make the load a
	// goodput search (goodput.go).
	GoodputTarget   float64           `hcl:"goodput_target" doc:"search the highest rate, within rate = [LOW, HIGH], at which this share of arrivals is good (max_goodput_rate), such as 0.99"`
	SearchProbes    int               `hcl:"search_probes" doc:"goodput search: levels probed at most, the bounds included"`
	SearchTolerance float64           `hcl:"search_tolerance" doc:"goodput search: stop when the highest good rate and the lowest bad one are this close, as a share of the good one"`
	ExtraBody       cty.Value         `hcl:"extra_body" doc:"object merged into each request body (null removes a key)"`
	Headers         map[string]string `hcl:"headers" doc:"request headers"`
	KeepRequests    bool              `hcl:"keep_requests" doc:"record each request (times, status, tokens) in the attempt"`
	Timeout         time.Duration     `hcl:"timeout" doc:"how long one request may take"`
	RequireOwn      bool              `hcl:"require_own" doc:"to a loopback address, once this attempt has launched or adopted a server: a load answered by a process that is not of this attempt fails before it is measured (false: it is reported)"`

	Concurrency int     // the level Run runs: requests in flight, or at most
	Rate        float64 // arrivals per second; 0: the closed model
}

// OpenAIDefaults is the load "openai" as a plan that sets nothing but url
// runs it; Concurrency is 1 as for every load (see HTTPDefaults).
func OpenAIDefaults() *OpenAI {
	return &OpenAI{Stream: true, Concurrency: 1, Concurrencies: Levels{1}, MaxTokens: 128, Timeout: 10 * time.Minute,
		SearchProbes: defaultSearchProbes, SearchTolerance: defaultSearchTolerance, RequireOwn: true}
}

// Answered is where the load sends and whether it must be answered by
// the attempt's own server (the runner checks who answered).
func (o *OpenAI) Answered() (url string, requireOwn bool) { return o.URL, o.RequireOwn }

func (o *OpenAI) sweepOf() sweep {
	return sweep{concurrency: &o.Concurrency, rate: &o.Rate, lists: [2]*Levels{&o.Concurrencies, &o.Rates}, search: &o.GoodputTarget}
}

func (*OpenAI) throughput() string { return "output_tokens_per_s" }

const (
	defaultOpenAIRequests = 1000
	defaultPromptTokens   = 128
	// warmupBase offsets warm-up prompts so the measured ones are the same
	// with or without a warm-up.
	warmupBase = 1 << 30
)

// Check checks what no attribute's type says alone.
func (o *OpenAI) Check() error {
	c := *o
	errs := c.sweepOf().check()
	c.sweepOf().resolve()
	errs = append(errs, checkModel(c.Concurrency, c.Rate, c.Requests, c.Timeout)...)
	errs = append(errs, o.checkSearch()...)
	for _, n := range []struct {
		name string
		v    float64
	}{{"prompt_tokens", float64(o.PromptTokens)}, {"max_tokens", float64(o.MaxTokens)}, {"ttft_limit_ms", o.TTFTLimitMS}, {"tpot_limit_ms", o.TPOTLimitMS}} {
		if n.v < 0 {
			errs = append(errs, &schema.AttrError{Attr: n.name, Err: fmt.Errorf("must not be negative, not %v", n.v)})
		}
	}
	wc := o.workload()
	if o.URL == "" {
		// Not known yet (validate): the endpoint is judged when it is.
		wc.Chat = true
	}
	if err := wc.Check(); err != nil {
		errs = append(errs, err)
	}
	if o.Expect != "" {
		if _, err := regexp.Compile(o.Expect); err != nil {
			errs = append(errs, &schema.AttrError{Attr: "expect", Err: fmt.Errorf("is not a regular expression (Go's RE2 syntax; in a quoted HCL string a backslash is written twice): %w", err)})
		}
	}
	if _, err := o.extra(); err != nil {
		errs = append(errs, &schema.AttrError{Attr: "extra_body", Err: err})
	}
	return errors.Join(errs...)
}

// checkSearch checks a goodput search: a target share, the rate bounds
// and what a request must meet.
func (o *OpenAI) checkSearch() []error {
	var errs []error
	if o.GoodputTarget == 0 {
		return nil
	}
	if !(o.GoodputTarget > 0 && o.GoodputTarget <= 1) {
		errs = append(errs, &schema.AttrError{Attr: "goodput_target", Err: fmt.Errorf("must be a share above 0 and at most 1, such as 0.99, not %v", o.GoodputTarget)})
	}
	if len(o.Rates) != 2 || o.Rates[0] >= o.Rates[1] {
		errs = append(errs, &schema.AttrError{Attr: "rate", Err: fmt.Errorf("must be [LOW, HIGH] for a goodput search, the bounds of the rates it probes, LOW below HIGH, such as [1, 64]; it is %s", orUnset(o.Rates.Show()))})
	}
	if len(o.Concurrencies) > 1 {
		errs = append(errs, &schema.AttrError{Attr: "concurrency", Err: errors.New("must be one number in a goodput search, which varies the rate")})
	}
	if o.TTFTLimitMS == 0 && o.TPOTLimitMS == 0 {
		errs = append(errs, &schema.AttrError{Attr: "goodput_target", Err: errors.New("needs ttft_limit_ms or tpot_limit_ms: without a limit every completed request is good")})
	}
	if o.SearchProbes < 2 || o.SearchProbes > MaxLevels {
		errs = append(errs, &schema.AttrError{Attr: "search_probes", Err: fmt.Errorf("must be from 2 (the bounds) to %d, not %d", MaxLevels, o.SearchProbes)})
	}
	if !(o.SearchTolerance > 0 && o.SearchTolerance < 1) {
		errs = append(errs, &schema.AttrError{Attr: "search_tolerance", Err: fmt.Errorf("must be a share above 0 and below 1, such as 0.05, not %v", o.SearchTolerance)})
	}
	return errs
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// extra is the extra body as Go values.
func (o *OpenAI) extra() (map[string]any, error) {
	v := o.ExtraBody
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return nil, nil
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return nil, fmt.Errorf("must be an object, such as { temperature = 0 }, not %s", v.Type().FriendlyName())
	}
	v, _ = v.UnmarkDeep()
	data, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Summary is what explain says of the load.
func (o *OpenAI) Summary() string {
	c := o.resolved() // the requests when neither limit is set
	con, rate := summaryLevel(c.sweepOf())
	s := modelSummary(con, rate, "Poisson", c.Ramp, c.Warmup, c.Duration, c.Requests, 0)
	if o.Stream {
		s += ", streamed"
	}
	if o.GoodputTarget > 0 && len(o.Rates) == 2 {
		return fmt.Sprintf("a goodput search of the highest rate in %s at which %v of arrivals are good, at most %d probes, each: %s", o.Rates.Show(), o.GoodputTarget, o.SearchProbes, s)
	}
	return levelsSummary(c.sweepOf(), s)
}

// OpenAIMetrics is what the load "openai" reports, under the definitions
// of SGLang's bench_serving (calculate_metrics) and, for goodput, vLLM's
// benchmark_serving; latencies are over successful requests only.
type OpenAIMetrics struct {
	Requests             float64  `metric:"requests" doc:"measured requests that ended"`
	Completed            float64  `metric:"completed" doc:"of them, answered in full" better:"higher"`
	Errors               float64  `metric:"errors" doc:"of them, failed" better:"lower"`
	Resent               float64  `metric:"resent" doc:"times a request was sent again after the server closed its kept-alive connection unread"`
	Dropped              float64  `metric:"dropped" doc:"open model: arrivals dropped, Concurrency in flight and as many waiting" better:"lower"`
	Late                 float64  `metric:"late" doc:"open model: arrivals sent more than max(1ms, the gap to the next) after they were due" better:"lower"`
	DurationS            float64  `metric:"duration_s" doc:"measured time, from the end of the warm-up to the end of the last measured request"`
	InputTokens          float64  `metric:"input_tokens" doc:"prompt tokens of completed requests (the server's usage, else estimated)"`
	OutputTokens         float64  `metric:"output_tokens" doc:"output tokens of completed requests (usage, else chunks or words)"`
	RequestsPerS         float64  `metric:"requests_per_s" doc:"completed requests per second" better:"higher"`
	InputTokensPerS      float64  `metric:"input_tokens_per_s" doc:"input tokens per second" better:"higher"`
	OutputTokensPerS     float64  `metric:"output_tokens_per_s" doc:"output tokens per second" better:"higher"`
	TotalTokensPerS      float64  `metric:"total_tokens_per_s" doc:"input and output tokens per second" better:"higher"`
	AchievedConcurrency  float64  `metric:"achieved_concurrency" doc:"sum of e2e latencies over the measured time"`
	GoodputRequestsPerS  float64  `metric:"goodput_requests_per_s" doc:"requests within ttft_limit_ms and tpot_limit_ms per second" better:"higher"`
	GoodputShare         float64  `metric:"goodput_share" doc:"those requests over all measured ones, failed ones included" better:"higher"`
	AnswersMatchingShare *float64 `metric:"answers_matching_share" doc:"with expect: completed answers that match it" better:"higher"`
	TTFT                 Summary  `metric:"ttft" doc:"time to the first chunk with text (without a stream: the whole answer)" better:"lower"`
	E2E                  Summary  `metric:"e2e_latency" doc:"time to data: [DONE] (or the end of the answer)" better:"lower"`
	TPOT                 Summary  `metric:"tpot" doc:"stream: (e2e - ttft) / (output_tokens - 1)" better:"lower"`
	ITL                  Summary  `metric:"itl" doc:"stream: every gap between chunks with text" better:"lower"`
}

// Summary is a time's mean (exact) and median and 99th percentile (from
// an HDR histogram, 3 significant digits), in ms; absent when nothing
// was measured.
type Summary struct {
	Mean   *float64 `metric:"mean_ms" doc:"mean (ms)"`
	Median *float64 `metric:"median_ms" doc:"median (ms)"`
	P99    *float64 `metric:"p99_ms" doc:"99th percentile (ms)"`
}

type openaiRun struct {
	o      OpenAI
	chat   bool
	extra  map[string]any
	client *http.Client
	work   *workloads.Workload
	expect *regexp.Regexp
	// keepText: the answers' text is kept (for expect, or to send back
	// in a conversation's next turn); else only counted.
	keepText bool
	// convs numbers the conversations begun, measured and warm-up apart.
	convs, warmConvs atomic.Int64
	workers          []openaiWorker

	// Every time is streamed into a histogram: memory does not grow with
	// the requests or their tokens (only KeepRequests keeps a record each).
	ttft, e2e, tpot, itl *latencies

	mu      sync.Mutex
	samples []string
	kept    []RequestRecord
	start   time.Time // of the measured phase, for kept records
}

// openaiWorker is what one worker alone writes: its scratch space for a
// request and its tallies, read once every worker has stopped.
type openaiWorker struct {
	buf []byte          // the stream's line buffer, reused
	itl []time.Duration // one request's gaps, reused
	// conv is the conversation this worker is in, and whether it began
	// measured: its turns go through this worker one after another.
	conv         *workloads.Conversation
	convMeasured bool

	completed, good, matching, resent int64
	inTokens, outTokens               int64
	ttftSum, e2eSum, tpotSum, itlSum  time.Duration
	tpots, itls                       int64
	sources                           map[string]int
}

// Run runs the load through dial (nil: this machine's network) and returns
// its metrics (OpenAIMetrics).
func (o OpenAI) Run(ctx context.Context, dial Dialer, progress func(Progress)) (Result, error) {
	if len(o.sweepOf().levels()) > 1 || (o.GoodputTarget > 0 && len(o.Rates) > 1) {
		return Result{}, fmt.Errorf("openai load: %w", errSweep)
	}
	r, err := o.prepare(ctx, dial)
	if err != nil {
		return Result{}, fmt.Errorf("openai load: %w", err)
	}
	defer r.client.CloseIdleConnections()
	if r.o.Model == "" {
		if r.o.Model, err = r.discoverModel(ctx); err != nil {
			return Result{}, fmt.Errorf("openai load: %w", err)
		}
	}
	e := &engine[outcome]{
		concurrency: r.o.Concurrency, ramp: r.o.Ramp, warmup: r.o.Warmup, duration: r.o.Duration, requests: r.o.Requests,
		hit:    r.do,
		record: r.record,
	}
	if r.o.Rate > 0 {
		e.pacer = ramped(&Poisson{Rate: r.o.Rate, Seed: r.o.Seed}, r.o.Ramp)
	}
	e.begin()
	r.start = e.measureStart
	stop := reportProgress(ctx, progress, e.progress)
	e.run(ctx)
	stop()
	res := r.result(e)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("openai load interrupted: %w", err)
	}
	return res, nil
}

// resolved fills the fields a Go caller left zero from OpenAIDefaults,
// and the limits that depend on others.
func (o OpenAI) resolved() OpenAI {
	d := OpenAIDefaults()
	o.Concurrencies, o.Rates = slices.Clone(o.Concurrencies), slices.Clone(o.Rates)
	o.sweepOf().resolve()
	if o.Concurrency == 0 {
		o.Concurrency = d.Concurrency
	}
	if len(o.Concurrencies) == 0 {
		o.Concurrencies = Levels{float64(o.Concurrency)}
	}
	if len(o.Rates) == 0 && o.Rate > 0 {
		o.Rates = Levels{o.Rate}
	}
	if o.SearchProbes == 0 {
		o.SearchProbes = d.SearchProbes
	}
	if o.SearchTolerance == 0 {
		o.SearchTolerance = d.SearchTolerance
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = d.MaxTokens
	}
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.Requests == 0 && o.Duration == 0 {
		o.Requests = defaultOpenAIRequests
	}
	return o
}

func (o *OpenAI) Resolved() Config {
	r := o.resolved()
	return &r
}

func (o OpenAI) prepare(ctx context.Context, dial Dialer) (*openaiRun, error) {
	o = o.resolved()
	checkErr := o.Check()
	var errs []error
	if checkErr != nil {
		errs = append(errs, checkErr)
	}
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
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	shards := min(o.Concurrency/64+1, 4)
	r := &openaiRun{o: o, chat: chat, ttft: newLatencies(shards), e2e: newLatencies(shards), tpot: newLatencies(shards), itl: newLatencies(shards)}
	r.extra, _ = o.extra() // Check said it is fine
	if o.Expect != "" {
		r.expect = regexp.MustCompile(o.Expect) // Check compiled it
	}
	r.workers = make([]openaiWorker, o.Concurrency)
	for i := range r.workers {
		r.workers[i].sources = map[string]int{}
	}
	w, err := workloads.Open(ctx, o.workload())
	if err != nil {
		return nil, err
	}
	r.work = w
	r.keepText = r.expect != nil || o.Turns > 1
	r.client = &http.Client{Transport: &http.Transport{
		DialContext:         dial.orDefault().quick(),
		MaxIdleConns:        o.Concurrency,
		MaxIdleConnsPerHost: o.Concurrency,
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

// body builds request i's JSON.
func (r *openaiRun) body(p workloads.Request) ([]byte, error) {
	b := map[string]any{
		"model":      r.o.Model,
		"max_tokens": p.MaxTokens,
		"stream":     r.o.Stream,
	}
	if r.o.Stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	switch {
	case len(p.Messages) > 0:
		b["messages"] = p.Messages
	case r.chat:
		b["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
	default:
		b["prompt"] = p.Text
	}
	for k, v := range r.extra {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return json.Marshal(b)
}

// outcome is what one request observed; its times run from the start it
// was given (the send, or in the open model the intended send).
type outcome struct {
	status      int
	err         error
	ttft, e2e   time.Duration
	inTokens    int
	outTokens   int
	tokenSource string // usage, stream (chunks counted) or words
	answer      string // only with expect, until matched
	resent      int    // times sent again on a new connection (see do)
}

func (r *openaiRun) do(ctx context.Context, w int, seq int64, measured bool, from time.Time) outcome {
	wk := &r.workers[w]
	p, ok := r.turn(wk, measured)
	if !ok {
		return outcome{err: fmt.Errorf("conversation %d: %w", p.Conversation, wk.conv.Err())}
	}
	out := outcome{inTokens: p.InputTokens}
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
	wk.itl = wk.itl[:0]
	if r.o.Stream {
		out.err = r.readStream(resp.Body, from, wk, &out, &answer, &reasoning)
	} else {
		out.err = r.readWhole(resp.Body, from, &out, &answer, &reasoning)
	}
	if out.err == nil && p.Turn+1 < p.Turns {
		// The next turn sends this answer back: a turn that failed sends
		// nothing, and its conversation ends (workloads.Conversation.Next).
		wk.conv.Answer(answer.String())
	}
	if r.expect != nil {
		out.answer = answer.String()
		if out.answer == "" {
			out.answer = reasoning.String()
		}
	}
	return out
}

// turn is the next request of worker wk: the next turn of its
// conversation, or the first of a new one when that has none left (or
// began in the other phase: warm-up conversations are numbered apart, so
// the measured ones are the same with or without a warm-up). ok is false
// only when a new conversation has no turn to give (its history grew
// past the limit).
func (r *openaiRun) turn(wk *openaiWorker, measured bool) (workloads.Request, bool) {
	if wk.conv != nil && wk.convMeasured == measured {
		if p, ok := wk.conv.Next(); ok {
			return p, true
		}
	}
	n := int(r.convs.Add(1) - 1)
	if !measured {
		n = warmupBase + int(r.warmConvs.Add(1)-1)
	}
	wk.conv, wk.convMeasured = r.work.Conversation(n), measured
	p, ok := wk.conv.Next()
	p.Conversation = n
	return p, ok
}

// isChat says whether u is a chat completions URL.
func isChat(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && strings.HasSuffix(pu.Path, "/chat/completions")
}

// workload is the workloads.Config the load's attributes make.
func (o *OpenAI) workload() workloads.Config {
	return workloads.Config{
		Dataset: o.Dataset, Format: workloads.Format(o.DatasetFormat), Chat: isChat(o.URL),
		PromptTokens: o.PromptTokens, SharedPrefixTokens: o.SharedPrefixTokens, PrefixGroups: o.PrefixGroups,
		Prompts: o.Prompts, Turns: o.Turns, MaxTokens: o.MaxTokens, Seed: o.Seed,
	}
}

func (r *openaiRun) readWhole(body io.Reader, from time.Time, out *outcome, answer, reasoning *strings.Builder) error {
	data, err := io.ReadAll(body)
	out.e2e = time.Since(from)
	out.ttft = out.e2e // as bench_serving: without a stream the first token comes with the last
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	// The words are counted when the server gives no usage: the text is
	// read whether or not it is kept.
	var a, rs strings.Builder
	var c chunkFields
	if err := scanChunk(data, &a, &rs, &c); err != nil {
		return fmt.Errorf("response is not JSON: %w: %.200s", err, data)
	}
	if c.errValue != nil {
		return fmt.Errorf("server error: %s", c.errValue)
	}
	if r.keepText {
		answer.WriteString(a.String())
		reasoning.WriteString(rs.String())
	}
	if c.usage {
		out.tokenSource = "usage"
		out.inTokens, out.outTokens = c.prompt, c.completion
	} else {
		out.outTokens = len(strings.Fields(a.String() + " " + rs.String()))
		out.tokenSource = "words"
	}
	return nil
}

// readStream reads server-sent events: "data: {...}" lines, then
// "data: [DONE]". A chunk with text is a token arrival (TTFT for the first,
// an inter-token latency for the others, as bench_serving counts them,
// kept in the worker's scratch until the request is recorded); the
// end-to-end latency runs to [DONE].
func (r *openaiRun) readStream(body io.Reader, from time.Time, wk *openaiWorker, out *outcome, answer, reasoning *strings.Builder) error {
	if wk.buf == nil {
		wk.buf = make([]byte, 4<<10) // an event is a few hundred bytes; the scanner grows it for a longer one
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(wk.buf, 16<<20)
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
			out.e2e = now.Sub(from)
			if out.tokenSource == "" {
				out.outTokens = chunks
				out.tokenSource = "stream"
			}
			return nil
		}
		// Only the members that count are read, and the text only when it
		// is kept (scanChunk).
		var c chunkFields
		var ka, kr *strings.Builder
		if r.keepText {
			ka, kr = answer, reasoning
		}
		if err := scanChunk(payload, ka, kr, &c); err != nil {
			return fmt.Errorf("stream event is not JSON: %w: %.200s", err, payload)
		}
		if c.errValue != nil {
			return fmt.Errorf("server error in stream: %s", c.errValue)
		}
		if c.usage {
			out.tokenSource = "usage"
			out.inTokens, out.outTokens = c.prompt, c.completion
		}
		if !c.text {
			continue // a role-only first delta, a finish or usage event: no token
		}
		chunks++
		if chunks == 1 {
			out.ttft = now.Sub(from)
		} else {
			wk.itl = append(wk.itl, now.Sub(last))
		}
		last = now
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	return errors.New("stream ended without data: [DONE]")
}

// record adds a measured request to the worker's tallies and the
// histograms (a latencies shard per worker).
func (r *openaiRun) record(w int, o outcome, from, _ time.Time) bool {
	wk := &r.workers[w]
	wk.resent += int64(o.resent)
	if r.o.KeepRequests {
		rec := RequestRecord{Start: from.Sub(r.start), Status: o.status, TTFT: o.ttft, E2E: o.e2e, InputTokens: o.inTokens, OutputTokens: o.outTokens}
		if o.err != nil {
			rec.Error = o.err.Error()
		}
		r.mu.Lock()
		r.kept = append(r.kept, rec)
		r.mu.Unlock()
	}
	if o.err != nil {
		r.sample("error: " + o.err.Error())
		return true
	}
	wk.completed++
	wk.inTokens += int64(o.inTokens)
	wk.outTokens += int64(o.outTokens)
	wk.sources[o.tokenSource]++
	r.ttft.record(w, o.ttft)
	r.e2e.record(w, o.e2e)
	wk.ttftSum += o.ttft
	wk.e2eSum += o.e2e
	var tpot time.Duration
	if o.outTokens > 1 {
		tpot = (o.e2e - o.ttft) / time.Duration(o.outTokens-1)
		r.tpot.record(w, tpot)
		wk.tpotSum += tpot
		wk.tpots++
	}
	r.itl.recordAll(w, wk.itl)
	for _, d := range wk.itl {
		wk.itlSum += d
	}
	wk.itls += int64(len(wk.itl))
	if (r.o.TTFTLimitMS == 0 || o.ttft <= msDuration(r.o.TTFTLimitMS)) && (r.o.TPOTLimitMS == 0 || tpot <= msDuration(r.o.TPOTLimitMS)) {
		wk.good++
	}
	if r.expect != nil {
		if r.expect.MatchString(o.answer) {
			wk.matching++
		} else {
			r.sample(truncate(o.answer, 300))
		}
	}
	return false
}

func (r *openaiRun) sample(s string) {
	r.mu.Lock()
	if len(r.samples) < maxSamples {
		r.samples = append(r.samples, s)
	}
	r.mu.Unlock()
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// result computes the metrics of the measured phase (OpenAIMetrics).
func (r *openaiRun) result(e *engine[outcome]) Result {
	var t openaiWorker
	sources := map[string]int{}
	for _, w := range r.workers {
		t.completed += w.completed
		t.good += w.good
		t.matching += w.matching
		t.resent += w.resent
		t.inTokens += w.inTokens
		t.outTokens += w.outTokens
		t.ttftSum += w.ttftSum
		t.e2eSum += w.e2eSum
		t.tpotSum += w.tpotSum
		t.itlSum += w.itlSum
		t.tpots += w.tpots
		t.itls += w.itls
		for k, n := range w.sources {
			sources[k] += n
		}
	}
	secs := e.measured(true).Seconds()
	per := func(n float64) float64 {
		if secs <= 0 {
			return 0
		}
		return n / secs
	}
	requests := e.ended.Load()
	m := OpenAIMetrics{
		Requests:            float64(requests),
		Completed:           float64(t.completed),
		Errors:              float64(e.errors.Load()),
		Resent:              float64(t.resent),
		Dropped:             float64(e.dropped.Load()),
		Late:                float64(e.late.Load()),
		DurationS:           secs,
		InputTokens:         float64(t.inTokens),
		OutputTokens:        float64(t.outTokens),
		RequestsPerS:        per(float64(t.completed)),
		InputTokensPerS:     per(float64(t.inTokens)),
		OutputTokensPerS:    per(float64(t.outTokens)),
		TotalTokensPerS:     per(float64(t.inTokens + t.outTokens)),
		AchievedConcurrency: per(t.e2eSum.Seconds()),
		GoodputRequestsPerS: per(float64(t.good)),
		TTFT:                summarize(r.ttft, t.ttftSum, t.completed),
		E2E:                 summarize(r.e2e, t.e2eSum, t.completed),
	}
	if requests > 0 {
		m.GoodputShare = float64(t.good) / float64(requests)
	}
	if r.expect != nil && t.completed > 0 {
		share := float64(t.matching) / float64(t.completed)
		m.AnswersMatchingShare = &share
	}
	if r.o.Stream { // without a stream there is one arrival: no TPOT, no ITL
		m.TPOT = summarize(r.tpot, t.tpotSum, t.tpots)
		m.ITL = summarize(r.itl, t.itlSum, t.itls)
	}

	notes := map[string]string{
		"model":    r.o.Model,
		"endpoint": "completions",
		"arrivals": "closed",
		"prompts":  r.work.Summary().Source,
	}
	if r.chat {
		notes["endpoint"] = "chat"
	}
	if r.o.Rate > 0 {
		notes["arrivals"] = "poisson"
	}
	if sum := r.work.Summary(); sum.Format != "" {
		notes["dataset_format"] = string(sum.Format)
		notes["dataset_conversations"] = strconv.Itoa(sum.Conversations)
	}
	if r.o.Turns > 1 {
		notes["turns"] = strconv.Itoa(r.o.Turns)
	}
	switch len(sources) {
	case 0:
	case 1:
		for s := range sources {
			notes["token_source"] = s
		}
	default:
		notes["token_source"] = "mixed"
	}
	res := Result{Metrics: schema.MetricValues(m), Notes: notes, Samples: r.samples}
	if r.o.KeepRequests {
		res.Requests = r.kept
		slices.SortStableFunc(res.Requests, func(a, b RequestRecord) int { return int(a.Start - b.Start) })
	}
	return res
}

// summarize is a Summary of n times whose sum is sum and whose histogram
// is l.
func summarize(l *latencies, sum time.Duration, n int64) Summary {
	if n == 0 {
		return Summary{}
	}
	m := l.merged()
	mean := float64(sum) / float64(n) / float64(time.Millisecond)
	return Summary{Mean: &mean, Median: m.ms(50), P99: m.ms(99)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
