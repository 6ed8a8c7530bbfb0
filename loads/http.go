package loads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP is a load of identical HTTP/1.1 requests.
//
// With Rate == 0 the model is closed: Concurrency workers, each on its own
// keep-alive connection, send the next request as soon as the last one
// ends; latency runs from send to the last byte of the response.
//
// With Rate > 0 the model is open: requests are due at fixed intervals of
// 1/Rate, whatever the server does, and latency runs from the INTENDED send
// time, so a server that stalls shows the stall in every request that was
// due during it (coordinated omission is not hidden). At most Concurrency
// requests are in flight and at most Concurrency more wait for a
// connection; an arrival finding that queue full is dropped and counted
// (metric dropped), and one sent more than max(1ms, 1/Rate) after it was
// due is counted as late.
//
// The run lasts Warmup (not counted) and then Duration, or until Requests
// measured requests are sent (open model: arrivals, sent or dropped),
// whichever comes first (neither: 10s). After
// that no request is sent; those in flight finish and are counted, and the
// measured time runs until the last one ends.
type HTTP struct {
	URL, Method string // Method: GET, or POST when there is a Body
	Headers     map[string]string
	Body        []byte
	Concurrency int           // closed: workers (default 10); open: in-flight cap (default 256)
	Rate        float64       // > 0: open model, arrivals per second
	Duration    time.Duration // measured time
	Requests    int           // measured requests
	Warmup      time.Duration
	Timeout     time.Duration // per request, connect included (default 30s)
}

const (
	defaultConcurrency     = 10
	defaultOpenConcurrency = 256
	defaultDuration        = 10 * time.Second
	defaultTimeout         = 30 * time.Second
	// connectBackoff keeps a closed-model worker whose server is down from
	// spinning: each failed connect still counts as one error.
	connectBackoff = 10 * time.Millisecond
)

func (h HTTP) withDefaults() (HTTP, error) {
	var errs []error
	if h.URL == "" {
		errs = append(errs, errors.New("url is empty"))
	}
	if h.Concurrency < 0 || h.Requests < 0 || h.Duration < 0 || h.Warmup < 0 || h.Timeout < 0 {
		errs = append(errs, errors.New("concurrency, requests, duration, warmup and timeout must not be negative"))
	}
	if h.Rate < 0 || math.IsNaN(h.Rate) || math.IsInf(h.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate %v: must be a positive number of requests per second, or 0 for a closed model", h.Rate))
	}
	if len(errs) > 0 {
		return h, errors.Join(errs...)
	}
	if h.Method == "" {
		h.Method = "GET"
		if len(h.Body) > 0 {
			h.Method = "POST"
		}
	}
	if h.Concurrency == 0 {
		h.Concurrency = defaultConcurrency
		if h.Rate > 0 {
			h.Concurrency = defaultOpenConcurrency
		}
	}
	if h.Duration == 0 && h.Requests == 0 {
		h.Duration = defaultDuration
	}
	if h.Timeout == 0 {
		h.Timeout = defaultTimeout
	}
	return h, nil
}

// Run runs the load through dial (nil: this machine's network) and returns
// its metrics: requests_per_s (successful responses per measured second),
// latency_{p50,p90,p99,p999,max,mean}_ms (successful requests), requests
// (measured requests that ended), errors (those that failed: connect,
// timeout, status >= 400, I/O, protocol) and errors_connect,
// errors_timeout, errors_status_4xx, errors_status_5xx, errors_io,
// errors_protocol, bytes_received (bytes read by measured requests,
// headers included), connections (opened by measured requests),
// reconnects (measured requests moved, unsent, off a kept-alive connection
// the server had closed), dropped and late (open model), duration_s.
//
// progress, if not nil, is called about once a second and at the end. When
// ctx ends first, Run returns what it measured so far and ctx's error.
func (h HTTP) Run(ctx context.Context, dial Dialer, progress func(Progress)) (Result, error) {
	h, err := h.withDefaults()
	if err != nil {
		return Result{}, fmt.Errorf("http load: %w", err)
	}
	w, err := newWire(h.URL, h.Method, h.Headers, h.Body)
	if err != nil {
		return Result{}, fmt.Errorf("http load: %w", err)
	}
	r := &httpRun{h: h, ctx: ctx, lat: newLatencies(), start: time.Now()}
	r.measureStart = r.start.Add(h.Warmup)
	if h.Duration > 0 {
		r.stopAt = r.measureStart.Add(h.Duration)
	}
	r.clients = make([]*client1, h.Concurrency)
	r.tallies = make([]tally, h.Concurrency)
	for i := range r.clients {
		r.clients[i] = newClient1(ctx, w, dial.orDefault(), h.Timeout)
	}
	stop := reportProgress(ctx, progress, r.progress)
	if h.Rate > 0 {
		r.runOpen()
	} else {
		r.runClosed()
	}
	stop()
	res := r.result()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("http load interrupted: %w", err)
	}
	return res, nil
}

type httpRun struct {
	h            HTTP
	ctx          context.Context
	clients      []*client1
	lat          *latencies
	start        time.Time
	measureStart time.Time
	stopAt       time.Time // zero: no time limit

	issued  atomic.Int64 // measured requests started (Requests limit)
	ended   atomic.Int64 // measured requests ended, failed or not
	errs    [errProtocol + 1]atomic.Int64
	late    atomic.Int64
	dropped atomic.Int64
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
	lastEnd    int64 // UnixNano of the worker's last measured request's end
	_          [32]byte
}

// admit reports whether a request due at t is measured, and reserves
// its place under the Requests limit; ok false means send no more.
func (r *httpRun) admit(t time.Time) (measured, ok bool) {
	if t.Before(r.measureStart) {
		return false, true
	}
	if !r.stopAt.IsZero() && !t.Before(r.stopAt) {
		return false, false
	}
	if r.h.Requests > 0 && r.issued.Add(1) > int64(r.h.Requests) {
		return false, false
	}
	return true, true
}

func (r *httpRun) runClosed() {
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			defer c.close()
			for r.ctx.Err() == nil {
				from := time.Now()
				measured, ok := r.admit(from)
				if !ok {
					return
				}
				c0 := c.counts()
				status, err := c.do()
				end := time.Now()
				if r.ctx.Err() != nil {
					return // cut short by the caller: neither a result nor an error
				}
				if measured {
					r.record(i, from, end, status, err, c.counts().minus(c0))
				}
				var ce *connectError
				if errors.As(err, &ce) {
					sleep(r.ctx, connectBackoff)
				}
			}
		})
	}
	wg.Wait()
}

func (r *httpRun) runOpen() {
	interval := float64(time.Second) / r.h.Rate
	lateAfter := max(time.Millisecond, time.Duration(interval))
	due := make(chan time.Time, len(r.clients))
	var outstanding atomic.Int64 // sent to the workers and not yet ended
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			defer c.close()
			for t := range due {
				if r.ctx.Err() != nil {
					outstanding.Add(-1)
					continue // drain: the scheduler stops soon
				}
				measured := !t.Before(r.measureStart)
				if measured && time.Since(t) > lateAfter {
					r.late.Add(1)
				}
				c0 := c.counts()
				status, err := c.do()
				end := time.Now()
				outstanding.Add(-1)
				if measured && r.ctx.Err() == nil {
					r.record(i, t, end, status, err, c.counts().minus(c0))
				}
			}
		})
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; r.ctx.Err() == nil; i++ {
		t := r.start.Add(time.Duration(float64(i) * interval))
		measured, ok := r.admit(t)
		if !ok {
			break
		}
		if d := time.Until(t); d > 0 {
			timer.Reset(d)
			select {
			case <-r.ctx.Done():
			case <-timer.C:
			}
		}
		// An arrival finding Concurrency requests in flight and as many
		// waiting is dropped. A full channel alone does not mean that: on
		// a busy machine idle workers may not have run yet, and waiting
		// for them is right (the arrival keeps its intended time).
		if outstanding.Load() >= int64(2*len(r.clients)) {
			if measured {
				r.dropped.Add(1)
			}
			continue
		}
		outstanding.Add(1)
		select {
		case due <- t:
		case <-r.ctx.Done():
		}
	}
	close(due)
	wg.Wait()
}

func (r *httpRun) record(worker int, from, end time.Time, status int, err error, used counts) {
	w := &r.tallies[worker]
	w.bytes += used.bytes
	w.conns += used.conns
	w.reconnects += used.reconnects
	w.lastEnd = max(w.lastEnd, end.UnixNano())
	kind := classify(status, err)
	if kind == errNone {
		r.lat.record(worker, end.Sub(from))
	} else {
		r.errs[kind].Add(1)
		r.mu.Lock()
		if len(r.samples) < maxSamples {
			if err != nil {
				r.samples = append(r.samples, err.Error())
			} else {
				r.samples = append(r.samples, fmt.Sprintf("HTTP status %d", status))
			}
		}
		r.mu.Unlock()
	}
	r.ended.Add(1)
}

func (r *httpRun) errorCount() int64 {
	var n int64
	for i := range r.errs {
		n += r.errs[i].Load()
	}
	return n
}

// elapsed is the measured time: from the end of the warm-up to the end of
// the last measured request (or to now while running).
func (r *httpRun) elapsed(now time.Time) time.Duration {
	if now.Before(r.measureStart) {
		return 0
	}
	return now.Sub(r.measureStart)
}

func (r *httpRun) progress() Progress {
	el := r.elapsed(time.Now())
	p := Progress{Done: r.ended.Load(), Errors: r.errorCount(), Elapsed: el}
	if el > 0 {
		p.Rate = float64(p.Done) / el.Seconds()
	}
	return p
}

func (r *httpRun) result() Result {
	ended, errs := r.ended.Load(), r.errorCount()
	var bytes, conns, reconnects, last int64
	for _, w := range r.tallies {
		bytes += w.bytes
		conns += w.conns
		reconnects += w.reconnects
		last = max(last, w.lastEnd)
	}
	var el time.Duration
	if last > 0 {
		el = r.elapsed(time.Unix(0, last))
	}
	m := map[string]float64{
		"requests":          float64(ended),
		"errors":            float64(errs),
		"errors_connect":    float64(r.errs[errConnect].Load()),
		"errors_timeout":    float64(r.errs[errTimeout].Load()),
		"errors_status_4xx": float64(r.errs[errStatus4xx].Load()),
		"errors_status_5xx": float64(r.errs[errStatus5xx].Load()),
		"errors_io":         float64(r.errs[errIO].Load()),
		"errors_protocol":   float64(r.errs[errProtocol].Load()),
		"bytes_received":    float64(bytes),
		"connections":       float64(conns),
		"reconnects":        float64(reconnects),
		"dropped":           float64(r.dropped.Load()),
		"late":              float64(r.late.Load()),
		"duration_s":        el.Seconds(),
		"requests_per_s":    0,
	}
	if el > 0 {
		m["requests_per_s"] = float64(ended-errs) / el.Seconds()
	}
	latencyMetrics(m, "latency", r.lat.merged())
	model := "closed"
	if r.h.Rate > 0 {
		model = "open"
	}
	return Result{
		Metrics: m,
		Notes:   map[string]string{"model": model},
		Samples: r.samples,
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
