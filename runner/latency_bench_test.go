package runner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

// BenchmarkDetectionLatency measures how long a wait takes to notice a log
// line: from the moment the line is written to the moment the step is
// confirmed. Beside it, the same measure for the shell loop people write
// by hand, `until grep -q LINE LOG; do sleep 1; done`. Each sub-benchmark
// reports the median as ms/detect; compare them as a ratio, run in one go:
//
//	go test ./runner -run '^$' -bench DetectionLatency -benchtime 20x
func BenchmarkDetectionLatency(b *testing.B) {
	b.Run("lockstep", func(b *testing.B) {
		dir := b.TempDir()
		log := filepath.Join(dir, "app.log")
		src := fmt.Sprintf(`
plan "latency" {}
step "wait" "ready" {
  timeout = "30s"
  probe "log" "app" {
    path = %q
  }
  postcondition {
    condition = strcontains(probe.app.text, "ready to roll")
  }
}
`, log)
		p, diags := plans.Parse(filepath.Join(dir, "plan.hcl"), []byte(src))
		if diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		scope, diags := p.Resolve(plans.Inputs{})
		if diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		var lat []time.Duration
		for b.Loop() {
			os.WriteFile(log, []byte("loading\n"), 0o600)
			w := &writeOnStart{path: log, delay: randomDelay()}
			res := runner.Run(context.Background(), runner.Options{
				Plan: p, Scope: scope, Observer: w,
				Targets: func(string, func(events.Event)) (targets.Target, error) { return targets.NewLocal(), nil },
			})
			if res.Status != events.Confirmed {
				b.Fatalf("status %s", res.Status)
			}
			lat = append(lat, w.confirmed.Sub(w.written))
		}
		reportMedian(b, lat)
	})
	b.Run("shell-sleep-loop", func(b *testing.B) {
		dir := b.TempDir()
		log := filepath.Join(dir, "app.log")
		var lat []time.Duration
		for b.Loop() {
			os.WriteFile(log, []byte("loading\n"), 0o600)
			cmd := exec.Command("sh", "-c", `until grep -q "ready to roll" "$1"; do sleep 1; done`, "sh", log)
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(randomDelay())
			written := appendLine(log)
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(written))
		}
		reportMedian(b, lat)
	})
}

// writeOnStart appends the awaited line a little after the wait starts
// and notes when the step is confirmed.
type writeOnStart struct {
	path               string
	delay              time.Duration
	written, confirmed time.Time
	done               chan struct{}
}

func (w *writeOnStart) Emit(e events.Event) {
	switch e.Type {
	case events.StepStarted:
		w.done = make(chan struct{})
		go func() {
			defer close(w.done)
			time.Sleep(w.delay)
			w.written = appendLine(w.path)
		}()
	case events.StepFinished:
		w.confirmed = time.Now()
		<-w.done
	}
}

// randomDelay is when, after the watcher starts, the line is written:
// anywhere in a second, so a 1s poll is not favoured or penalised by
// phase.
func randomDelay() time.Duration {
	return time.Duration(rand.Int64N(int64(time.Second)))
}

func appendLine(path string) time.Time {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	t := time.Now()
	f.WriteString("fired up and ready to roll!\n")
	return t
}

func reportMedian(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/detect")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms/detect")
}
