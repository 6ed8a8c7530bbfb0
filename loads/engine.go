package loads

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// engine is the one scheduler every load runs on. It owns admission (the
// warm-up, the Duration and Requests limits), the closed and open models,
// the dropped and late counts, cancellation and the measured time; a
// load's hitter sends one request and records what it observed.
//
// Closed model (pacer nil): Concurrency workers, each sending its next
// request as soon as the last one ends; a request is timed from its send.
//
// Open model: arrival i is due at start + pacer.Due(i), whatever the
// server does, and is timed from that INTENDED send, so a server that
// stalls shows the stall in every request that was due during it
// (coordinated omission is not hidden). At most Concurrency requests are
// in flight and at most Concurrency more wait for a worker; an arrival
// finding that queue full is dropped and counted (dropped), and one that
// a worker takes more than max(1 ms, its gap to the next arrival) after
// it was due is counted as late.
//
// A ramp comes first, sent and not measured: in the closed model worker
// w starts at w/Concurrency of the ramp, in the open model the pacer's
// rate grows over it (ramped). The run lasts Ramp and Warmup (sent, not
// measured) and then Duration, or until
// Requests measured requests are admitted (open model: arrivals, sent or
// dropped), whichever comes first. After that no request is sent; those
// in flight finish and are measured, and the measured time runs from the
// end of the warm-up to the end of the last one.
type engine[O any] struct {
	concurrency int
	pacer       Pacer // nil: closed model
	ramp        time.Duration
	warmup      time.Duration
	duration    time.Duration // 0: no time limit
	requests    int           // 0: no count limit

	// hit sends a request on worker w (0 <= w < concurrency): the seq-th
	// of the warm-up, or of the measured phase when measured, timed from
	// from.
	hit func(ctx context.Context, w int, seq int64, measured bool, from time.Time) O
	// record keeps a measured request's outcome, ended at end; it says
	// whether the request failed. It is called from worker w only, and
	// never for a request the caller's cancellation cut short.
	record func(w int, o O, from, end time.Time) (failed bool)
	// backoff, if set, says how long worker w waits after o before its
	// next request in the closed model (a refused connect must not spin).
	backoff func(o O) time.Duration

	ctx          context.Context
	start        time.Time
	measureStart time.Time
	stopAt       time.Time // zero: no time limit

	admitted      atomic.Int64 // measured requests admitted (Requests limit)
	warmSeq       atomic.Int64
	ended, errors atomic.Int64 // measured requests ended, and of those failed
	late, dropped atomic.Int64
	lastEnd       []paddedInt64 // per worker: UnixNano of its last measured end
	// pacingLateness, if set, is told how late each arrival was handed
	// on; wait, if set, replaces the pacer thread's wait (benchmarks).
	pacingLateness func(time.Duration)
	wait           func(t time.Time, stop <-chan struct{}) bool
}

type paddedInt64 struct {
	v int64
	_ [56]byte // one cache line per worker
}

// begin starts the load's clock; run then runs it until its limits or
// ctx end it.
func (e *engine[O]) begin() {
	e.start = time.Now()
	e.measureStart = e.start.Add(e.ramp + e.warmup)
	if e.duration > 0 {
		e.stopAt = e.measureStart.Add(e.duration)
	}
	e.lastEnd = make([]paddedInt64, e.concurrency)
}

func (e *engine[O]) run(ctx context.Context) {
	e.ctx = ctx
	if e.pacer == nil {
		e.runClosed()
	} else {
		e.runOpen()
	}
}

// admit reports whether a request due at t is measured and its number in
// its phase, reserving its place under the Requests limit; ok false means
// send no more.
func (e *engine[O]) admit(t time.Time) (seq int64, measured, ok bool) {
	if t.Before(e.measureStart) {
		return e.warmSeq.Add(1) - 1, false, true
	}
	if !e.stopAt.IsZero() && !t.Before(e.stopAt) {
		return 0, false, false
	}
	n := e.admitted.Add(1)
	if e.requests > 0 && n > int64(e.requests) {
		return 0, false, false
	}
	return n - 1, true, true
}

func (e *engine[O]) runClosed() {
	var wg sync.WaitGroup
	for w := range e.concurrency {
		wg.Go(func() {
			if e.ramp > 0 && w > 0 {
				// time.Until: the start may be past already (a slow spawn).
				sleep(e.ctx, time.Until(e.start.Add(e.ramp*time.Duration(w)/time.Duration(e.concurrency))))
			}
			for e.ctx.Err() == nil {
				from := time.Now()
				seq, measured, ok := e.admit(from)
				if !ok {
					return
				}
				o := e.hit(e.ctx, w, seq, measured, from)
				end := time.Now()
				if e.ctx.Err() != nil {
					return // cut short by the caller: neither a result nor an error
				}
				if measured {
					e.finish(w, o, from, end)
				}
				if e.backoff != nil {
					if d := e.backoff(o); d > 0 {
						sleep(e.ctx, d)
					}
				}
			}
		})
	}
	wg.Wait()
}

type arrival struct {
	due       time.Time
	seq       int64
	measured  bool
	lateAfter time.Duration // taken later than this after due: late
}

func (e *engine[O]) runOpen() {
	due := make(chan arrival, e.concurrency)
	var outstanding atomic.Int64 // handed to the workers and not yet ended
	var wg sync.WaitGroup
	for w := range e.concurrency {
		wg.Go(func() {
			for a := range due {
				if e.ctx.Err() != nil {
					outstanding.Add(-1)
					continue // drain: the pacer stops soon
				}
				if a.measured && time.Since(a.due) > a.lateAfter {
					e.late.Add(1)
				}
				o := e.hit(e.ctx, w, a.seq, a.measured, a.due)
				end := time.Now()
				outstanding.Add(-1)
				if a.measured && e.ctx.Err() == nil {
					e.finish(w, o, a.due, end)
				}
			}
		})
	}

	stop := make(chan struct{})
	cancelled := context.AfterFunc(e.ctx, func() { close(stop) })
	defer cancelled()
	wait, done := pacerThread()
	if e.wait != nil {
		wait = e.wait
	}
	next := e.start.Add(e.pacer.Due(0))
	for i := int64(0); e.ctx.Err() == nil; i++ {
		t := next
		next = e.start.Add(e.pacer.Due(i + 1))
		seq, measured, ok := e.admit(t)
		if !ok {
			break
		}
		if !wait(t, stop) {
			break
		}
		if e.pacingLateness != nil {
			e.pacingLateness(time.Since(t))
		}
		// An arrival finding Concurrency requests in flight and as many
		// waiting is dropped. A full channel alone does not mean that: on
		// a busy machine idle workers may not have run yet, and waiting
		// for them is right (the arrival keeps its intended time).
		if outstanding.Load() >= int64(2*e.concurrency) {
			if measured {
				e.dropped.Add(1)
			}
			continue
		}
		outstanding.Add(1)
		select {
		case due <- arrival{due: t, seq: seq, measured: measured, lateAfter: max(time.Millisecond, next.Sub(t))}:
		case <-stop:
			outstanding.Add(-1)
		}
	}
	done()
	close(due)
	wg.Wait()
}

func (e *engine[O]) finish(w int, o O, from, end time.Time) {
	e.lastEnd[w].v = max(e.lastEnd[w].v, end.UnixNano())
	if e.record(w, o, from, end) {
		e.errors.Add(1)
	}
	e.ended.Add(1)
}

// measured is the measured time: from the end of the warm-up to the end
// of the last measured request (to now while running, with final false).
func (e *engine[O]) measured(final bool) time.Duration {
	end := time.Now()
	if final {
		var last int64
		for i := range e.lastEnd {
			last = max(last, e.lastEnd[i].v)
		}
		if last == 0 {
			return 0
		}
		end = time.Unix(0, last)
	}
	if end.Before(e.measureStart) {
		return 0
	}
	return end.Sub(e.measureStart)
}

// progress is what the load reports while it runs; it reads only atomics.
func (e *engine[O]) progress() Progress {
	el := e.measured(false)
	p := Progress{Done: e.ended.Load(), Errors: e.errors.Load(), Elapsed: el}
	if el > 0 {
		p.Rate = float64(p.Done) / el.Seconds()
	}
	return p
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
