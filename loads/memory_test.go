package loads_test

import (
	"context"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
)

// BenchmarkOpenAIMemory runs the OpenAI load at concurrency 1024 against
// an in-process server that answers 64 tokens at once, for 3, 12 and 30 s
// (-short: 12 s), and reports the peak of the heap live after each GC during the run
// (MB, server included) and the requests it made: memory that grows with
// the requests grows between the two.
func BenchmarkOpenAIMemory(b *testing.B) {
	durations := []time.Duration{3 * time.Second, 12 * time.Second, 30 * time.Second}
	if testing.Short() {
		durations = durations[1:2]
	}
	for _, d := range durations {
		b.Run(d.String(), func(b *testing.B) {
			for range b.N {
				srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Tokens: 64, Usage: true, Forget: true})
				ctx, cancel := context.WithCancel(context.Background())
				var peak uint64
				var wg sync.WaitGroup
				wg.Go(func() {
					s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
					t := time.NewTicker(50 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
							metrics.Read(s)
							peak = max(peak, s[0].Value.Uint64())
						}
					}
				})
				res, err := loads.OpenAI{URL: srv.URL + "/v1/chat/completions", Stream: true, Concurrency: 1024, Duration: d, PromptTokens: 16, MaxTokens: 64}.Run(context.Background(), nil, nil)
				cancel()
				wg.Wait()
				srv.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(peak)/1e6, "peak_live_MB")
				b.ReportMetric(res.Metrics["completed"], "requests")
				b.ReportMetric(res.Metrics["output_tokens"], "tokens")
			}
		})
	}
}
