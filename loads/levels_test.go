package loads

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads/loadtest"
)

func TestLevelsDecode(t *testing.T) {
	for _, c := range []struct {
		in   cty.Value
		want string
		err  string
	}{
		{cty.NumberIntVal(8), "8", ""},
		{cty.StringVal("8"), "8", ""}, // as HCL converts a number written as a string
		{cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(8), cty.NumberFloatVal(64)}), "[1, 8, 64]", ""},
		{cty.ListVal([]cty.Value{cty.NumberFloatVal(0.5), cty.NumberIntVal(2)}), "[0.5, 2]", ""},
		{cty.EmptyTupleVal, "", "a sweep lists from 1 to 64 levels, not 0"},
		{cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.StringVal("x")}), "", "a sweep is a list of numbers"},
		{cty.BoolVal(true), "", "must be a number, or a list of numbers"},
	} {
		var l Levels
		err := l.SetCty(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%#v: error %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%#v: %v", c.in, err)
		case c.err == "" && l.Show() != c.want:
			t.Errorf("%#v: shows %q, want %q", c.in, l.Show(), c.want)
		}
	}
}

// A sweep runs each level in turn with its own config: the concurrency
// the server sees in flight is the level's, each level measures its own
// requests, and the best is the one with the most throughput.
func TestRunLevelsRunsEachLevel(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 2 * time.Millisecond, ITL: time.Millisecond, Tokens: 4, Usage: true})
	defer srv.Close()
	cfg := OpenAIDefaults()
	cfg.URL, cfg.Concurrencies, cfg.Requests, cfg.MaxTokens = srv.URL+"/v1/chat/completions", Levels{1, 4}, 8, 4
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Run(t.Context(), nil, nil); !errors.Is(err, errSweep) {
		t.Fatalf("Run of a sweep: %v, want errSweep", err)
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	lv, err := RunLevels(t.Context(), cfg, nil, func(p LevelProgress) {
		mu.Lock()
		seen[p.Index] = true
		mu.Unlock()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lv.Levels) != 2 || lv.Levels[0].Level.Concurrency != 1 || lv.Levels[1].Level.Concurrency != 4 {
		t.Fatalf("levels %+v", lv.Levels)
	}
	for _, l := range lv.Levels {
		if l.Result.Metrics["completed"] != 8 {
			t.Errorf("%v: %v completed, want 8", l.Level, l.Result.Metrics["completed"])
		}
	}
	best := 0
	if lv.Levels[1].Result.Metrics["output_tokens_per_s"] > lv.Levels[0].Result.Metrics["output_tokens_per_s"] {
		best = 1
	}
	if lv.Best != best {
		t.Errorf("best %d, want %d", lv.Best, best)
	}
	if !seen[0] || !seen[1] {
		t.Errorf("progress came for levels %v, want 0 and 1", seen)
	}

	// A rate sweep keeps the plan's one concurrency at every level.
	h := HTTPDefaults()
	hs := loadtest.NewHTTP()
	defer hs.Close()
	h.URL, h.Concurrencies, h.Rates, h.Requests = hs.URL, Levels{3}, Levels{200, 400}, 10
	lv, err = RunLevels(t.Context(), h, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lv.Levels {
		if want := (Level{Concurrency: 3, Rate: h.Rates[i]}); l.Level != want || l.Result.Metrics["requests"] != 10 {
			t.Errorf("level %d: %+v with %v requests, want %+v with 10", i, l.Level, l.Result.Metrics["requests"], want)
		}
	}
}

// The search, on a server whose arrivals are good up to 37/s: the answer
// is a rate probed good, within the tolerance of 37, in at most the
// probes allowed; the bounds decide alone when they can.
func TestSearchGoodput(t *testing.T) {
	search := func(lo, hi float64, probes int) (Levelled, []float64) {
		o := OpenAIDefaults()
		o.Rates, o.GoodputTarget, o.TTFTLimitMS, o.SearchProbes = Levels{lo, hi}, 0.99, 100, probes
		var rates []float64
		run := func(i int, l Level) (LevelResult, error) {
			rates = append(rates, l.Rate)
			share := 1.0
			if l.Rate > 37 {
				share = 0.5
			}
			return LevelResult{Level: l, Result: Result{Metrics: map[string]float64{"requests": 100, "goodput_share": share}}}, nil
		}
		var out Levelled
		if err := searchGoodput(context.Background(), o, run, func(lr LevelResult) { out.Levels = append(out.Levels, lr) }, &out); err != nil {
			t.Fatal(err)
		}
		return out, rates
	}
	out, rates := search(1, 100, 12)
	got := out.Metrics["max_goodput_rate"]
	if got > 37 || got < 37*(1-defaultSearchTolerance) {
		t.Errorf("max_goodput_rate %v, want within 5%% below 37 (probed %v)", got, rates)
	}
	if rates[0] != 1 || rates[1] != 100 || len(rates) > 12 {
		t.Errorf("probed %v: want 1, then 100, then at most 10 more", rates)
	}
	if b := out.Levels[out.Best]; b.Level.Rate != got || !*b.Good {
		t.Errorf("best %+v, want the good level at %v", b, got)
	}
	if out, rates := search(1, 100, 3); len(rates) != 3 || out.Metrics["max_goodput_rate"] != 50.5 && out.Metrics["max_goodput_rate"] != 1 {
		t.Errorf("3 probes: probed %v, answer %v", rates, out.Metrics["max_goodput_rate"])
	}
	if out, rates := search(40, 100, 8); len(rates) != 1 || out.Metrics["max_goodput_rate"] != 0 || out.Best != -1 && len(out.Levels) > 0 && out.Best != 0 {
		t.Errorf("lower bound bad: probed %v, answer %v", rates, out.Metrics["max_goodput_rate"])
	}
	if out, rates := search(1, 20, 8); len(rates) != 2 || out.Metrics["max_goodput_rate"] != 20 {
		t.Errorf("upper bound good: probed %v, answer %v", rates, out.Metrics["max_goodput_rate"])
	}
}

// Dropped arrivals count against a level's good share.
func TestGoodShareCountsDropped(t *testing.T) {
	if got := goodShare(map[string]float64{"requests": 90, "dropped": 10, "goodput_share": 1}); got != 0.9 {
		t.Errorf("90 good of 90 sent and 10 dropped: share %v, want 0.9", got)
	}
}

// In the closed model a ramp starts worker w at w/Concurrency of it, and
// nothing sent during the ramp is measured.
func TestClosedRampStaggersWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		first := map[int]time.Duration{}
		measured := 0
		t0 := time.Now()
		e := &engine[struct{}]{
			concurrency: 4, ramp: 4 * time.Second, duration: time.Second,
			hit: func(_ context.Context, w int, _ int64, m bool, from time.Time) struct{} {
				mu.Lock()
				if _, ok := first[w]; !ok {
					first[w] = from.Sub(t0)
				}
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				return struct{}{}
			},
			record: func(int, struct{}, time.Time, time.Time) bool {
				mu.Lock()
				measured++
				mu.Unlock()
				return false
			},
		}
		e.begin()
		e.run(t.Context())
		for w := range 4 {
			if want := time.Duration(w) * time.Second; first[w] != want {
				t.Errorf("worker %d first sent at %v, want %v", w, first[w], want)
			}
		}
		// Measured: 1 s of 4 workers at 100 ms a request.
		if measured != 40 {
			t.Errorf("%d measured, want 40 (none of the ramp)", measured)
		}
	})
}

// A ramped Poisson process grows to its rate: few arrivals early in the
// ramp, the full rate after it.
func TestRampedPoisson(t *testing.T) {
	p := ramped(&Poisson{Rate: 1000, Seed: 1}, 2*time.Second).(*RampedPoisson)
	var inFirst, inLast int
	var last time.Duration
	for i := int64(0); ; i++ {
		d := p.Due(i)
		if d < last {
			t.Fatalf("arrival %d at %v, before %v", i, d, last)
		}
		last = d
		switch {
		case d < time.Second/2:
			inFirst++
		case d >= 2*time.Second && d < 3*time.Second:
			inLast++
		}
		if d >= 3*time.Second {
			break
		}
	}
	// The ramp's integral over its first 0.5 s: 1000/2 * 0.5^2 / 2 = 62.5.
	if inFirst < 30 || inFirst > 100 {
		t.Errorf("%d arrivals in the first 0.5 s of the ramp, want about 62", inFirst)
	}
	if inLast < 900 || inLast > 1100 {
		t.Errorf("%d arrivals in the second after the ramp, want about 1000", inLast)
	}
}

// Cut short in its second level, a sweep returns the first level whole
// and the second as far as it got, with the context's error.
func TestRunLevelsCutShort(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: time.Millisecond, ITL: 20 * time.Millisecond, Tokens: 50, Usage: true})
	defer srv.Close()
	cfg := OpenAIDefaults()
	cfg.URL, cfg.Concurrencies, cfg.Requests, cfg.MaxTokens = srv.URL+"/v1/chat/completions", Levels{1, 2, 4}, 4, 50
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lv, err := RunLevels(ctx, cfg, nil, func(p LevelProgress) {
		if p.Index == 1 && p.Done > 0 {
			cancel()
		}
	}, func(lr LevelResult) {})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if len(lv.Levels) != 2 || lv.Levels[0].Result.Metrics["completed"] != 4 || lv.Levels[1].Level.Concurrency != 2 {
		t.Fatalf("levels %+v: want the first whole and the second partial", lv.Levels)
	}
}
