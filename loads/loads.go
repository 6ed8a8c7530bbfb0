package loads

import (
	"context"
	"net"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Dialer opens a connection as net.Dialer.DialContext does. A nil Dialer
// dials from this machine; an SSH target passes its Dial so that the load
// reaches the target's loopback.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

func (d Dialer) orDefault() Dialer {
	if d != nil {
		return d
	}
	var nd net.Dialer
	return nd.DialContext
}

// quick is d with the connections it makes reading and writing as
// quickSyscalls makes them, for a client the load does not own (net/http's).
func (d Dialer) quick() Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return quickSyscalls(nc), nil
	}
}

// Progress is what a running load reports about once a second, and once at
// the end. Done and Errors count measured requests (warm-up excluded); Rate
// is Done per second of measured time.
type Progress struct {
	Done, Errors int64
	Rate         float64
	Elapsed      time.Duration
}

// Result is what a load observed.
type Result struct {
	// Metrics are keyed by snake_case names carrying their unit.
	Metrics map[string]float64
	// Notes say how metrics were obtained where that varies, e.g.
	// token_source = usage | stream | mixed.
	Notes map[string]string
	// Samples are a few failing answers (or error messages), for evidence.
	Samples []string
	// Requests holds one record per measured request, only when asked for.
	Requests []RequestRecord
}

// RequestRecord is one measured request. Times are offsets from the start
// of the measured phase (Start) or durations; TTFT and token counts are
// zero where they do not apply.
type RequestRecord struct {
	// Level is, in a sweep or a search (RunLevels), the index of the
	// level it was measured in; Start is then from that level's start.
	Level        int           `json:"level,omitempty"`
	Start        time.Duration `json:"start"`
	Status       int           `json:"status"`
	Error        string        `json:"error,omitempty"`
	TTFT         time.Duration `json:"ttft"`
	E2E          time.Duration `json:"e2e"`
	InputTokens  int           `json:"input_tokens"`
	OutputTokens int           `json:"output_tokens"`
}

// maxSamples bounds Result.Samples: evidence, not a log.
const maxSamples = 5

// progressEvery is how often a running load calls its progress function.
const progressEvery = time.Second

// latencies records durations in microseconds into HDR histograms split in
// shards, so that a thousand workers neither share one lock nor hold a
// histogram each (about 150 KB apiece).
type latencies struct {
	shards []shard
}

type shard struct {
	mu     sync.Mutex
	h      *hdrhistogram.Histogram
	lo, hi int64    // exact extremes, in µs: a quantile is clamped to them
	_      [24]byte // keep shards on separate cache lines
}

// Latencies up to an hour are tracked at 3 significant digits; longer ones
// are clamped (a request timeout is far below).
const maxTrackedMicros = int64(time.Hour / time.Microsecond)

// newLatencies makes n shards (at most 16; about 180 KB each): the HTTP
// load's thousands of requests a second want 16, the OpenAI load's
// streams, each a few events a second, far fewer.
func newLatencies(n int) *latencies {
	l := &latencies{}
	l.shards = make([]shard, min(max(n, 1), 16))
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(1, maxTrackedMicros, 3)
	}
	return l
}

func (l *latencies) record(shard int, d time.Duration) {
	s := &l.shards[shard%len(l.shards)]
	s.mu.Lock()
	s.add(d)
	s.mu.Unlock()
}

// recordAll records ds under one lock: a request's inter-token gaps.
func (l *latencies) recordAll(shard int, ds []time.Duration) {
	s := &l.shards[shard%len(l.shards)]
	s.mu.Lock()
	for _, d := range ds {
		s.add(d)
	}
	s.mu.Unlock()
}

func (s *shard) add(d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 1 {
		us = 1
	}
	if us > maxTrackedMicros {
		us = maxTrackedMicros
	}
	_ = s.h.RecordValue(us) // cannot fail: clamped to the trackable range
	if s.lo == 0 || us < s.lo {
		s.lo = us
	}
	s.hi = max(s.hi, us)
}

// merged is every shard's histogram in one, with the exact extremes.
func (l *latencies) merged() merged {
	m := merged{h: hdrhistogram.New(1, maxTrackedMicros, 3)}
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		m.h.Merge(s.h)
		if s.lo > 0 && (m.lo == 0 || s.lo < m.lo) {
			m.lo = s.lo
		}
		m.hi = max(m.hi, s.hi)
		s.mu.Unlock()
	}
	return m
}

type merged struct {
	h      *hdrhistogram.Histogram
	lo, hi int64
}

// ms is the q-th percentile in ms: the histogram's value (3 significant
// digits) clamped to the exact extremes, so that identical times (a
// server's fixed delay, a test's fake clock) read exactly.
func (m merged) ms(q float64) *float64 {
	v := float64(min(max(m.h.ValueAtQuantile(q), m.lo), m.hi)) / 1000
	return &v
}

// quantiles summarizes h in milliseconds; all absent when h is empty.
func quantiles(m merged) Quantiles {
	if m.h.TotalCount() == 0 {
		return Quantiles{}
	}
	mean := m.h.Mean() / 1000
	return Quantiles{P50: m.ms(50), P90: m.ms(90), P99: m.ms(99), P999: m.ms(99.9), Max: m.ms(100), Mean: &mean}
}

// reportProgress calls fn every progressEvery until ctx ends, with what
// snapshot returns. A nil fn is fine.
func reportProgress(ctx context.Context, fn func(Progress), snapshot func() Progress) (stop func()) {
	if fn == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn(snapshot())
			}
		}
	}()
	return func() {
		cancel()
		<-done
		fn(snapshot())
	}
}
