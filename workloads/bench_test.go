package workloads_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"lockstep/workloads"
)

// BenchmarkRequest is what making one request costs the load, beside
// the request itself (a local server's answer takes 100 µs and more):
// Conversation(i) and its turn's Next, and for several turns the
// Answer that grows the history.
func BenchmarkRequest(b *testing.B) {
	datasets := filepath.Join("..", "examples", "datasets")
	answer := strings.Repeat("word ", 128)
	for _, bc := range []struct {
		name string
		cfg  workloads.Config
	}{
		{"generated/completions/128", workloads.Config{}},
		{"generated/chat/128", workloads.Config{Chat: true}},
		{"generated/chat/1024", workloads.Config{Chat: true, PromptTokens: 1024}},
		{"shared-prefix/chat/1024+128", workloads.Config{Chat: true, SharedPrefixTokens: 1024, PrefixGroups: 4}},
		{"sharegpt/chat", workloads.Config{Chat: true, Dataset: filepath.Join(datasets, "sharegpt.json")}},
		{"jsonl/completions", workloads.Config{Dataset: filepath.Join(datasets, "prompts.jsonl")}},
		{"multi-turn/chat/6-turns", workloads.Config{Chat: true, Turns: 6, Dataset: filepath.Join(datasets, "conversations.jsonl")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, err := workloads.Open(context.Background(), bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			requests := 0
			for i := 0; b.Loop(); i++ {
				c := w.Conversation(i)
				for {
					r, ok := c.Next()
					if !ok {
						break
					}
					requests++
					if r.MaxTokens == 0 {
						b.Fatal("no max_tokens")
					}
					c.Answer(answer)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/request")
		})
	}
}

// BenchmarkOpen is what reading a dataset costs before the first
// request: the sample ShareGPT file, every conversation checked.
func BenchmarkOpen(b *testing.B) {
	cfg := workloads.Config{Chat: true, Turns: 4, Dataset: filepath.Join("..", "examples", "datasets", "sharegpt.json")}
	b.SetBytes(56 << 10)
	for b.Loop() {
		if _, err := workloads.Open(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
}
