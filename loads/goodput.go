package loads

import (
	"context"
	"fmt"
	"strconv"
)

// The goodput search finds the highest request rate a server sustains
// within its service-level objective, as DistServe defines goodput and
// vLLM's benchmark_serving (--goodput ttft:MS tpot:MS) counts it: a
// request is good when it completed with its TTFT within ttft_limit_ms
// and its TPOT within tpot_limit_ms.
//
// A level's good share is good requests over every arrival of the
// measured phase: failed requests and, in the open model, arrivals
// dropped for want of a free slot count against it (a server that sheds
// load does not meet its objective by shedding it). A level is good when
// its share is at least GoodputTarget.
//
// rate = [LOW, HIGH] bounds the search. LOW is probed first: not good,
// and no rate in the bounds is (max_goodput_rate = 0). Then HIGH: good,
// and the answer is HIGH (the bound, not a limit the server showed). Else
// the answer lies between the highest good rate and the lowest bad one,
// and each probe halves that interval, until SearchProbes probes ran or
// the interval is within SearchTolerance of the good rate. The answer,
// max_goodput_rate, is the highest rate probed good. Each probe runs the
// whole load (warm-up, ramp, requests or duration) at its rate, a
// Poisson process seeded alike, and is recorded as a level.
//
// The search assumes a server whose share falls as the rate grows; where
// noise makes it not so, the answer is still a rate that was measured
// good, never one interpolated.

// goodShare is a level's good requests over its arrivals.
func goodShare(m map[string]float64) float64 {
	arrivals := m["requests"] + m["dropped"]
	if arrivals <= 0 {
		return 0
	}
	return m["goodput_share"] * m["requests"] / arrivals
}

const (
	defaultSearchProbes    = 8
	defaultSearchTolerance = 0.05
)

// searchGoodput runs the search's probes, keeping each in out.
func searchGoodput(ctx context.Context, o *OpenAI, run func(int, Level) (LevelResult, error), keep func(LevelResult), out *Levelled) error {
	o2 := o.resolved()
	base := o2.sweepOf().levels()[0]
	lo, hi := o2.Rates[0], o2.Rates[1]
	probes := o2.SearchProbes
	tol := o2.SearchTolerance
	good, bad := 0.0, 0.0 // highest good rate, lowest bad one; 0: none yet
	probe := func(rate float64) (bool, error) {
		l := base
		l.Rate = rate
		lr, err := run(len(out.Levels), l)
		if err != nil {
			if ctx.Err() != nil && len(lr.Result.Metrics) > 0 {
				out.Levels = append(out.Levels, lr)
			}
			return false, err
		}
		ok := goodShare(lr.Result.Metrics) >= o2.GoodputTarget
		lr.Good = &ok
		keep(lr)
		if ok && rate > good {
			good = rate
			out.Best = len(out.Levels) - 1
		}
		if !ok && (bad == 0 || rate < bad) {
			bad = rate
		}
		return ok, nil
	}
	finish := func(why string) error {
		out.Metrics = map[string]float64{"max_goodput_rate": good}
		out.Notes = map[string]string{"goodput_search": why}
		return nil
	}
	ok, err := probe(lo)
	if err != nil {
		return err
	}
	if !ok {
		return finish(fmt.Sprintf("not even the lower bound, %v/s, held a good share of %v", lo, o2.GoodputTarget))
	}
	if ok, err = probe(hi); err != nil {
		return err
	}
	if ok {
		return finish(fmt.Sprintf("the upper bound, %v/s, held a good share of %v: the server may sustain more", hi, o2.GoodputTarget))
	}
	for len(out.Levels) < probes && (bad-good) > tol*good {
		if _, err := probe((good + bad) / 2); err != nil {
			return err
		}
	}
	return finish(fmt.Sprintf("between %v/s (good) and %v/s (not) after %s probes", good, bad, strconv.Itoa(len(out.Levels))))
}
