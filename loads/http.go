package loads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"lockstep/schema"
)

// HTTP is the load "http": identical HTTP/1.1 requests, on the engine's
// closed model (Rate 0: Concurrency connections, each sending its next
// request when the last one ends) or open model (Rate arrivals per second,
// evenly spaced; see engine). Latency runs from the send (closed) or the
// intended send (open) to the last byte of the response.
//
// A Go caller may leave fields zero: Run takes them from HTTPDefaults.
type HTTP struct {
	URL     string            `hcl:"url,required" doc:"URL; 127.0.0.1 is the target's loopback"`
	Method  string            `hcl:"method" doc:"HTTP method" default:"GET, or POST with a body"`
	Headers map[string]string `hcl:"headers" doc:"request headers"`
	Body    string            `hcl:"body" doc:"request body"`
	// Concurrencies and Rates are the plan's concurrency and rate: one
	// number each, the level Concurrency and Rate hold, or a list, a
	// sweep (RunLevels). A Go caller sets Concurrency and Rate.
	Concurrencies Levels        `hcl:"concurrency" doc:"connections (closed model), or requests in flight at most (open model); a list, such as [1, 8, 64], sweeps them"`
	Rates         Levels        `hcl:"rate" doc:"arrivals per second, evenly spaced (open model); a list sweeps them; unset: each connection sends when its last request ends"`
	Duration      time.Duration `hcl:"duration" doc:"how long to measure, after the warm-up" default:"10s, when requests is unset"`
	Requests      int           `hcl:"requests" doc:"how many requests to measure (open model: arrivals, sent or dropped)"`
	Warmup        time.Duration `hcl:"warmup" doc:"how long to send requests before measuring, not counted (a duration)"`
	Ramp          time.Duration `hcl:"ramp" doc:"how long the load grows to its level before the warm-up, not counted: connections start one by one (closed model), the rate grows linearly from 0 (open model)"`
	Timeout       time.Duration `hcl:"timeout" doc:"how long one request may take, connect included"`
	RequireOwn    bool          `hcl:"require_own" doc:"to a loopback address, once this attempt has launched or adopted a server: a load answered by a process that is not of this attempt fails before it is measured (false: it is reported)"`

	Concurrency int     // the level Run runs: connections, or in flight at most
	Rate        float64 // arrivals per second; 0: the closed model
}

// HTTPDefaults is the load "http" as a plan that sets nothing but url
// runs it.
//
// Concurrency is 1, the same for every load and both models: a benchmark
// left at its defaults puts the least load it can on a server that may
// be shared or in production, and a plan that means more says so. In the
// open model a cap too small for the rate shows in dropped, never as a
// better latency.
func HTTPDefaults() *HTTP {
	return &HTTP{Concurrency: 1, Concurrencies: Levels{1}, Timeout: 30 * time.Second, RequireOwn: true}
}

// Answered is where the load sends and whether it must be answered by
// the attempt's own server (the runner checks who answered).
func (h *HTTP) Answered() (url string, requireOwn bool) { return h.URL, h.RequireOwn }

func (h *HTTP) sweepOf() sweep {
	return sweep{concurrency: &h.Concurrency, rate: &h.Rate, lists: [2]*Levels{&h.Concurrencies, &h.Rates}}
}

func (*HTTP) throughput() string { return "requests_per_s" }

const (
	defaultDuration = 10 * time.Second // when neither duration nor requests is set
	// connectBackoff keeps a closed-model worker whose server is down from
	// spinning: each failed connect still counts as one error.
	connectBackoff = 10 * time.Millisecond
)

// Check checks what no attribute's type says alone.
func (h *HTTP) Check() error {
	c := *h
	errs := c.sweepOf().check()
	c.sweepOf().resolve()
	return errors.Join(append(errs, checkModel(c.Concurrency, c.Rate, c.Requests, c.Timeout)...)...)
}

// checkModel checks the attributes every load has.
func checkModel(concurrency int, rate float64, requests int, timeout time.Duration) []error {
	var errs []error
	if concurrency < 1 {
		errs = append(errs, &schema.AttrError{Attr: "concurrency", Err: fmt.Errorf("must be at least 1, not %d", concurrency)})
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		errs = append(errs, &schema.AttrError{Attr: "rate", Err: fmt.Errorf("%v: must be a positive number of requests per second, or unset for a closed model", rate)})
	}
	if requests < 0 {
		errs = append(errs, &schema.AttrError{Attr: "requests", Err: fmt.Errorf("must not be negative, not %d", requests)})
	}
	if timeout <= 0 {
		errs = append(errs, &schema.AttrError{Attr: "timeout", Err: errors.New("must be longer than 0s")})
	}
	return errs
}

// Summary is what explain says of the load.
func (h *HTTP) Summary() string {
	c := h.resolved()
	con, rate := summaryLevel(c.sweepOf())
	return levelsSummary(c.sweepOf(), modelSummary(con, rate, "evenly spaced", c.Ramp, c.Warmup, c.Duration, c.Requests, defaultDuration))
}

// modelSummary says a load's model and limits in a line.
// In a sweep the swept one says so: concurrency 0 is "the level's", and
// a rate below 0 too (summaryLevel).
func modelSummary(concurrency int, rate float64, arrivals string, ramp, warmup, duration time.Duration, requests int, defDuration time.Duration) string {
	c, r := strconv.Itoa(concurrency), fmt.Sprintf("%v/s", rate)
	if concurrency == 0 {
		c = "the level's concurrency"
	}
	if rate < 0 {
		r = "the level's rate"
	}
	s := "closed model, " + c + " in flight"
	if rate != 0 {
		s = fmt.Sprintf("open model, %s %s, at most %s in flight", r, arrivals, c)
	}
	switch {
	case duration > 0 && requests > 0:
		s += fmt.Sprintf(", %d requests or %s", requests, schema.ShowDuration(duration))
	case requests > 0:
		s += fmt.Sprintf(", %d requests", requests)
	case duration > 0:
		s += ", " + schema.ShowDuration(duration)
	default:
		s += ", " + schema.ShowDuration(defDuration)
	}
	switch {
	case ramp > 0 && warmup > 0:
		s += " after a " + schema.ShowDuration(ramp) + " ramp and a " + schema.ShowDuration(warmup) + " warm-up"
	case ramp > 0:
		s += " after a " + schema.ShowDuration(ramp) + " ramp"
	case warmup > 0:
		s += " after a " + schema.ShowDuration(warmup) + " warm-up"
	}
	return s
}

// summaryLevel is the concurrency and rate modelSummary says: the swept
// one as "the level's".
func summaryLevel(s sweep) (int, float64) {
	c, r := *s.concurrency, *s.rate
	if len(*s.lists[0]) > 1 {
		c = 0
	}
	if len(*s.lists[1]) > 1 || s.search != nil && *s.search > 0 {
		r = -1
	}
	return c, r
}

// levelsSummary says a sweep's levels before the model of one: "4
// levels of concurrency [1, 8, 64, 256], each: closed model, ...".
func levelsSummary(s sweep, one string) string {
	for i, name := range []string{"concurrency", "rate"} {
		if l := s.lists[i]; len(*l) > 1 {
			return fmt.Sprintf("a sweep of %d levels of %s %s, each: %s", len(*l), name, l.Show(), one)
		}
	}
	return one
}

// HTTPMetrics is what the load "http" reports.
type HTTPMetrics struct {
	Requests        float64   `metric:"requests" doc:"measured requests that ended"`
	Errors          float64   `metric:"errors" doc:"measured requests that failed" better:"lower"`
	ErrorsConnect   float64   `metric:"errors_connect" doc:"of them, failed to connect" better:"lower"`
	ErrorsTimeout   float64   `metric:"errors_timeout" doc:"of them, timed out" better:"lower"`
	ErrorsStatus4xx float64   `metric:"errors_status_4xx" doc:"of them, answered 4xx" better:"lower"`
	ErrorsStatus5xx float64   `metric:"errors_status_5xx" doc:"of them, answered 5xx" better:"lower"`
	ErrorsIO        float64   `metric:"errors_io" doc:"of them, failed reading or writing" better:"lower"`
	ErrorsProtocol  float64   `metric:"errors_protocol" doc:"of them, answered what HTTP/1.1 does not allow" better:"lower"`
	BytesReceived   float64   `metric:"bytes_received" doc:"bytes read by measured requests, headers included"`
	Connections     float64   `metric:"connections" doc:"connections opened by measured requests"`
	Reconnects      float64   `metric:"reconnects" doc:"measured requests moved, unsent, off a kept-alive connection the server had closed"`
	Dropped         float64   `metric:"dropped" doc:"open model: arrivals dropped, Concurrency in flight and as many waiting" better:"lower"`
	Late            float64   `metric:"late" doc:"open model: arrivals sent more than max(1ms, 1/rate) after they were due" better:"lower"`
	DurationS       float64   `metric:"duration_s" doc:"measured time, from the end of the warm-up to the end of the last measured request"`
	RequestsPerS    float64   `metric:"requests_per_s" doc:"successful responses per measured second" better:"higher"`
	Latency         Quantiles `metric:"latency" doc:"latency of successful requests" better:"lower"`
}

// Quantiles are a latency's summary, from an HDR histogram (3
// significant digits); absent when nothing was measured.
type Quantiles struct {
	P50  *float64 `metric:"p50_ms" doc:"median (ms)"`
	P90  *float64 `metric:"p90_ms" doc:"90th percentile (ms)"`
	P99  *float64 `metric:"p99_ms" doc:"99th percentile (ms)"`
	P999 *float64 `metric:"p999_ms" doc:"99.9th percentile (ms)"`
	Max  *float64 `metric:"max_ms" doc:"maximum (ms)"`
	Mean *float64 `metric:"mean_ms" doc:"mean (ms)"`
}

// Run runs the load through dial (nil: this machine's network) and returns
// its metrics (HTTPMetrics).
//
// progress, if not nil, is called about once a second and at the end. When
// ctx ends first, Run returns what it measured so far and ctx's error.
func (h HTTP) Run(ctx context.Context, dial Dialer, progress func(Progress)) (Result, error) {
	h = h.resolved()
	if len(h.sweepOf().levels()) > 1 {
		return Result{}, fmt.Errorf("http load: %w", errSweep)
	}
	if err := h.Check(); err != nil {
		return Result{}, fmt.Errorf("http load: %w", err)
	}
	if h.URL == "" {
		return Result{}, errors.New("http load: url is empty")
	}
	w, err := newWire(h.URL, h.Method, h.Headers, []byte(h.Body))
	if err != nil {
		return Result{}, fmt.Errorf("http load: %w", err)
	}
	r := &httpRun{lat: newLatencies(h.Concurrency), tallies: make([]tally, h.Concurrency)}
	r.clients = make([]*client1, h.Concurrency)
	for i := range r.clients {
		r.clients[i] = newClient1(ctx, w, dial.orDefault(), h.Timeout)
	}
	defer func() {
		for _, c := range r.clients {
			c.close()
		}
	}()
	e := &engine[httpOutcome]{
		concurrency: h.Concurrency, ramp: h.Ramp, warmup: h.Warmup, duration: h.Duration, requests: h.Requests,
		hit:    r.hit,
		record: r.record,
		backoff: func(o httpOutcome) time.Duration {
			var ce *connectError
			if errors.As(o.err, &ce) {
				return connectBackoff
			}
			return 0
		},
	}
	if h.Rate > 0 {
		e.pacer = ramped(Constant{Rate: h.Rate}, h.Ramp)
	}
	e.begin()
	stop := reportProgress(ctx, progress, e.progress)
	e.run(ctx)
	stop()
	res := r.result(e, h.Rate > 0)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("http load interrupted: %w", err)
	}
	return res, nil
}

// resolved fills the fields a Go caller left zero from HTTPDefaults, and
// the method and duration that depend on others.
func (h HTTP) resolved() HTTP {
	d := HTTPDefaults()
	h.Concurrencies, h.Rates = slices.Clone(h.Concurrencies), slices.Clone(h.Rates)
	h.sweepOf().resolve()
	if h.Concurrency == 0 {
		h.Concurrency = d.Concurrency
	}
	if len(h.Concurrencies) == 0 {
		h.Concurrencies = Levels{float64(h.Concurrency)}
	}
	if len(h.Rates) == 0 && h.Rate > 0 {
		h.Rates = Levels{h.Rate}
	}
	if h.Timeout == 0 {
		h.Timeout = d.Timeout
	}
	if h.Method == "" {
		h.Method = "GET"
		if len(h.Body) > 0 {
			h.Method = "POST"
		}
	}
	if h.Duration == 0 && h.Requests == 0 {
		h.Duration = defaultDuration
	}
	return h
}

func (h *HTTP) Resolved() Config {
	r := h.resolved()
	return &r
}

// httpRun is the HTTP hitter: one HTTP/1.1 client per worker.
type httpRun struct {
	clients []*client1
	lat     *latencies
	errs    [errProtocol + 1]atomic.Int64
	tallies []tally // one per worker

	mu      sync.Mutex
	samples []string
}

// tally is what one worker alone writes per request and only the result
// reads, once every worker has stopped: no cache line shared between
// workers on each request.
type tally struct {
	bytes      int64 // read by measured requests
	conns      int64 // connections they opened
	reconnects int64 // of those, for a request whose kept-alive connection had closed
	_          [40]byte
}

type httpOutcome struct {
	status int
	err    error
	used   counts
}

func (r *httpRun) hit(_ context.Context, w int, _ int64, _ bool, _ time.Time) httpOutcome {
	c := r.clients[w]
	c0 := c.counts()
	status, err := c.do()
	return httpOutcome{status: status, err: err, used: c.counts().minus(c0)}
}

func (r *httpRun) record(w int, o httpOutcome, from, end time.Time) bool {
	t := &r.tallies[w]
	t.bytes += o.used.bytes
	t.conns += o.used.conns
	t.reconnects += o.used.reconnects
	kind := classify(o.status, o.err)
	if kind == errNone {
		r.lat.record(w, end.Sub(from))
		return false
	}
	r.errs[kind].Add(1)
	r.mu.Lock()
	if len(r.samples) < maxSamples {
		if o.err != nil {
			r.samples = append(r.samples, o.err.Error())
		} else {
			r.samples = append(r.samples, fmt.Sprintf("HTTP status %d", o.status))
		}
	}
	r.mu.Unlock()
	return true
}

func (r *httpRun) result(e *engine[httpOutcome], open bool) Result {
	var t tally
	for _, w := range r.tallies {
		t.bytes += w.bytes
		t.conns += w.conns
		t.reconnects += w.reconnects
	}
	el := e.measured(true)
	ended, errs := e.ended.Load(), e.errors.Load()
	m := HTTPMetrics{
		Requests:        float64(ended),
		Errors:          float64(errs),
		ErrorsConnect:   float64(r.errs[errConnect].Load()),
		ErrorsTimeout:   float64(r.errs[errTimeout].Load()),
		ErrorsStatus4xx: float64(r.errs[errStatus4xx].Load()),
		ErrorsStatus5xx: float64(r.errs[errStatus5xx].Load()),
		ErrorsIO:        float64(r.errs[errIO].Load()),
		ErrorsProtocol:  float64(r.errs[errProtocol].Load()),
		BytesReceived:   float64(t.bytes),
		Connections:     float64(t.conns),
		Reconnects:      float64(t.reconnects),
		Dropped:         float64(e.dropped.Load()),
		Late:            float64(e.late.Load()),
		DurationS:       el.Seconds(),
		Latency:         quantiles(r.lat.merged()),
	}
	if el > 0 {
		m.RequestsPerS = float64(ended-errs) / el.Seconds()
	}
	model := "closed"
	if open {
		model = "open"
	}
	return Result{
		Metrics: schema.MetricValues(m),
		Notes:   map[string]string{"model": model},
		Samples: r.samples,
	}
}
