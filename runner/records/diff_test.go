package records_test

import (
	"testing"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// attempt is an attempt whose one benchmark step measured metrics, with
// the runs' stats where given.
func attempt(n int, metrics map[string]float64, stats map[string]events.MetricStats) *records.Attempt {
	return &records.Attempt{Plan: "p", Number: n, Steps: []*records.Step{{
		Step:    events.Step{Addr: "benchmark.b", Kind: "benchmark"},
		Status:  events.Confirmed,
		Outcome: &events.Outcome{Status: events.Confirmed, Metrics: metrics, Stats: stats},
	}}}
}

func TestCompareCallsChangesByDirectionAndSpread(t *testing.T) {
	runs := func(vs ...float64) events.MetricStats {
		st := events.MetricStats{Values: vs, Min: vs[0], Max: vs[0], Median: vs[len(vs)/2]}
		for _, v := range vs {
			st.Min, st.Max = min(st.Min, v), max(st.Max, v)
		}
		return st
	}
	a := attempt(1, map[string]float64{"requests_per_s": 100, "latency_p99_ms": 10, "requests": 50, "errors": 0, "own": 1},
		map[string]events.MetricStats{"requests_per_s": runs(90, 100, 110), "latency_p99_ms": runs(9, 10, 11)})
	b := attempt(2, map[string]float64{"requests_per_s": 105, "latency_p99_ms": 20, "requests": 60, "errors": 0, "own": 2},
		map[string]events.MetricStats{"requests_per_s": runs(100, 105, 108), "latency_p99_ms": runs(19, 20, 22)})
	want := map[string]records.MetricChange{
		// Up and higher is better, but the runs overlap: noise could do it.
		"requests_per_s": {Verdict: "better", WithinSpread: true},
		// Up and lower is better; 9..11 against 19..22: a real change.
		"latency_p99_ms": {Verdict: "worse"},
		// A count: neither better nor worse.
		"requests": {},
		// Unchanged: no verdict.
		"errors": {},
		// A command's own metric: its direction is unknown.
		"own": {},
	}
	c := records.Compare(a, b)
	if len(c.Metrics) != len(want) {
		t.Fatalf("%d metric changes, want %d: %+v", len(c.Metrics), len(want), c.Metrics)
	}
	for _, m := range c.Metrics {
		w := want[m.Metric]
		if m.Verdict != w.Verdict || m.WithinSpread != w.WithinSpread {
			t.Errorf("%s: verdict %q, within spread %v; want %q, %v", m.Metric, m.Verdict, m.WithinSpread, w.Verdict, w.WithinSpread)
		}
	}
	// One side repeated is enough: 104 lies within 90..110.
	one := attempt(3, map[string]float64{"requests_per_s": 104}, nil)
	for _, m := range records.Compare(a, one).Metrics {
		if m.Metric == "requests_per_s" && !m.WithinSpread {
			t.Errorf("104 against runs of 90..110: not within the spread")
		}
	}
	// Neither repeated: no spread to be within.
	two := attempt(4, map[string]float64{"requests_per_s": 101}, nil)
	for _, m := range records.Compare(one, two).Metrics {
		if m.Metric == "requests_per_s" && (m.WithinSpread || m.Verdict != "worse") {
			t.Errorf("104 to 101: %+v", m)
		}
	}
}
