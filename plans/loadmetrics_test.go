package plans_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
	"lockstep/plans"
)

// The metric names validation accepts for a load are the names the load
// reports: every name a run reports is in its kind's Metrics, and every
// name in Metrics is reported by one of these runs (closed and open
// models; streaming with expect, and not streaming; a goodput search).
func TestLoadMetricsAreWhatLoadsReport(t *testing.T) {
	ctx := context.Background()
	check := func(kind string, results ...loads.Result) {
		t.Helper()
		k := plans.Language().LoadKind(kind)
		seen := map[string]bool{}
		for _, res := range results {
			for name := range res.Metrics {
				seen[name] = true
				if !slices.Contains(k.MetricNames(), name) {
					t.Errorf("load %q reports %s, which its LoadKind.Metrics lacks: validation would reject self.metrics.%s", kind, name, name)
				}
			}
		}
		for _, name := range k.MetricNames() {
			if !seen[name] {
				t.Errorf("load %q lists metric %s, which no run reported (seen: %v)", kind, name, slices.Sorted(maps.Keys(seen)))
			}
		}
	}

	h := loadtest.NewHTTP()
	defer h.Close()
	closed, err := loads.HTTP{URL: h.URL, Concurrency: 2, Requests: 20}.Run(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := loads.HTTP{URL: h.URL, Concurrency: 2, Rate: 200, Requests: 10}.Run(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("http", closed, open)

	o := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: time.Millisecond, ITL: time.Millisecond, Tokens: 4, Usage: true})
	defer o.Close()
	url := o.URL + "/v1/chat/completions"
	stream, err := loads.OpenAI{URL: url, Stream: true, Concurrency: 2, Requests: 4, MaxTokens: 4, Expect: "answer"}.Run(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := loads.OpenAI{URL: url, Concurrency: 2, Requests: 4, MaxTokens: 4}.Run(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A goodput search adds its answer to the last level's metrics.
	search, err := loads.RunLevels(ctx, &loads.OpenAI{URL: url, Concurrency: 2, Requests: 4, MaxTokens: 4, Rates: loads.Levels{50, 100}, TTFTLimitMS: 1000, GoodputTarget: 0.5}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("openai", stream, whole, loads.Result{Metrics: search.Metrics})
}
