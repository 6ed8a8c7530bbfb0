package loads_test

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
)

// The coordinated-omission check: a server that stops the world for 1 s in
// every 5 s. At 100 arrivals per second, each request due in a frozen
// second waits for its end, so the truth is known request by request; the
// open model, timing each request from when it was due, reports the p99
// of that truth within 1 %. With 60 requests in flight at most, 40 of
// those due in a frozen second wait in the load, unsent: timed from their
// send, they would hide the stall. (The closed model would report a p99 near 0:
// its workers stop sending while they wait.) On synctest's clock the
// figures do not depend on the machine.
func TestOpenModelReportsTheStallsTruth(t *testing.T) {
	const rate, period, frozen, measured = 100, 5 * time.Second, time.Second, 10 * time.Second
	var m map[string]float64
	synctest.Test(t, func(t *testing.T) {
		res, _ := runHTTPPiped(t, "/", loads.HTTP{Rate: rate, Concurrency: 60, Duration: measured},
			func(srv *loadtest.HTTP) { srv.Freeze(period, frozen) })
		m = res.Metrics
	})
	var truth []float64 // ms, arrival by arrival
	for i := range int(rate * measured.Seconds()) {
		due := time.Duration(i) * time.Second / rate
		wait := time.Duration(0)
		if into := due % period; into >= period-frozen {
			wait = period - into
		}
		truth = append(truth, float64(wait)/float64(time.Millisecond))
	}
	slices.Sort(truth)
	p99 := truth[int(math.Ceil(0.99*float64(len(truth))))-1]
	exactly(t, m, "dropped", 0)
	exactly(t, m, "requests", float64(len(truth)))
	within(t, m, "latency_p99_ms", p99*0.99, p99*1.01)
	t.Logf("p99: reported %v ms, truth %v ms", m["latency_p99_ms"], p99)
}

// keep_requests: the records kept are the requests the metrics summarize,
// so every metric recomputed from them equals the summary (counts and
// means exactly, up to float rounding; quantiles to the histogram's 3
// significant digits). Against a real server on loopback, so that the
// times differ from request to request.
func TestOpenAIKeptRequestsRecomputeTheMetrics(t *testing.T) {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 2 * time.Millisecond, ITL: time.Millisecond, Tokens: 5, Usage: true,
		FailEvery: 7, SlowEvery: 5, SlowTTFT: 8 * time.Millisecond})
	defer srv.Close()
	res := runOpenAI(t, loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Requests: 150, Concurrency: 6,
		PromptTokens: 20, KeepRequests: true})
	m := res.Metrics
	var completed, failed, in, out int
	var ttft, e2e, tpot []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, r := range res.Requests {
		if r.Error != "" {
			failed++
			continue
		}
		completed++
		in += r.InputTokens
		out += r.OutputTokens
		ttft = append(ttft, ms(r.TTFT))
		e2e = append(e2e, ms(r.E2E))
		if r.OutputTokens > 1 {
			tpot = append(tpot, ms((r.E2E-r.TTFT)/time.Duration(r.OutputTokens-1)))
		}
	}
	dur := m["duration_s"]
	close := func(name string, want float64) {
		t.Helper()
		within(t, m, name, want-1e-9*math.Max(1, math.Abs(want)), want+1e-9*math.Max(1, math.Abs(want)))
	}
	exactly(t, m, "requests", float64(len(res.Requests)))
	exactly(t, m, "completed", float64(completed))
	exactly(t, m, "errors", float64(failed))
	exactly(t, m, "input_tokens", float64(in))
	exactly(t, m, "output_tokens", float64(out))
	close("requests_per_s", float64(completed)/dur)
	close("output_tokens_per_s", float64(out)/dur)
	close("input_tokens_per_s", float64(in)/dur)
	close("achieved_concurrency", sum(e2e)/1000/dur)
	close("goodput_share", float64(completed)/float64(len(res.Requests)))
	for name, vs := range map[string][]float64{"ttft": ttft, "e2e_latency": e2e, "tpot": tpot} {
		close(name+"_mean_ms", sum(vs)/float64(len(vs)))
		slices.Sort(vs)
		for _, q := range []struct {
			suffix string
			p      float64
		}{{"_median_ms", 0.5}, {"_p99_ms", 0.99}} {
			// The histogram's quantile is a value at or just above the
			// rank's, to 3 significant digits (and 1 µs, its unit).
			want := vs[int(math.Ceil(q.p*float64(len(vs))))-1]
			within(t, m, name+q.suffix, want*0.999-0.001, want*1.001+0.001)
		}
	}
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}
