//go:build unix

package runner_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lockstep/internal/cpubench"
	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

// BenchmarkLocalRunSteps measures what a local run step of `true` costs,
// in plans of 100, 1,000 and 10,000 such steps, beside the anchor: a Go
// loop that execs `true` as often. ms/step is the run's wall time over its
// steps; first100 and last100 are the mean time per step of the first and
// the last hundred steps (from one step's start to the next one's), so a
// cost that grows with a step's position shows as last100 > first100.
// cpu-ms is the CPU time of this process per step (lockstep's own work,
// its garbage collector's included), child-cpu-ms that of the processes
// it started (the shells, true): on a machine shared with other work they
// move far less than the wall time. recorded/ runs the same plans as the
// command line does (RunRecorded): the record written, and synced at each
// step's end.
// Compare in one go:
//
//	go test ./runner -run '^$' -bench 'LocalRunSteps' -benchtime 1x
func BenchmarkLocalRunSteps(b *testing.B) {
	for _, recorded := range []bool{false, true} {
		for _, n := range []int{100, 1000, 10000} {
			name := fmt.Sprintf("lockstep/steps=%d", n)
			if recorded {
				name = fmt.Sprintf("recorded/steps=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchRunSteps(b, n, recorded) })
		}
	}
	b.Run("exec-loop", func(b *testing.B) {
		const n = 1000
		var total time.Duration
		cpu, switches := cpubench.Now(), sleeps()
		for b.Loop() {
			start := time.Now()
			for range n {
				if err := exec.Command("true").Run(); err != nil {
					b.Fatal(err)
				}
			}
			total += time.Since(start)
		}
		reportCPU(b, cpu, switches, b.N*n)
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N)/n, "ms/step")
	})
}

// reportCPU reports the CPU time used since m per step, for steps steps:
// lockstep's own and its commands' (the children it waited for); and
// the times this process's threads went to sleep since switches (a
// count of switches at m): each is a wake-up to wait for, which a loaded
// machine makes long.
func reportCPU(b *testing.B, m cpubench.Mark, switches int64, steps int) {
	self, children, ok := m.Since()
	if !ok {
		return
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(steps) }
	b.ReportMetric(per(self), "cpu-ms/step")
	b.ReportMetric(per(children), "child-cpu-ms/step")
	b.ReportMetric(float64(sleeps()-switches)/float64(steps), "sleeps/step")
}

// sleeps counts the voluntary context switches of this process's threads.
func sleeps() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Nvcsw
}

// benchRunSteps runs a plan of n run steps of true, through Run, or with
// recorded through RunRecorded as the command line does: the record
// written (and synced at each step's end) under a temp dir.
func benchRunSteps(b *testing.B, n int, recorded bool) {
	var src strings.Builder
	src.WriteString("plan \"steps\" {}\n")
	for i := range n {
		fmt.Fprintf(&src, "step \"run\" \"s%d\" {\n  command = \"true\"\n}\n", i)
	}
	dir := b.TempDir()
	p, diags := plans.Parse(filepath.Join(dir, "plan.hcl"), []byte(src.String()))
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	local := targets.NewLocal()
	var first, last, total time.Duration
	cpu, switches := cpubench.Now(), sleeps()
	for b.Loop() {
		o := &stepTimes{}
		opts := runner.Options{
			Plan: p, Scope: scope, Observer: o, LogDir: dir,
			Targets: func(string, func(events.Event)) (targets.Target, error) { return local, nil },
		}
		start := time.Now()
		var res runner.Result
		if recorded {
			a, err := runner.RunRecorded(context.Background(), runner.Recorded{Options: opts, Records: filepath.Join(dir, "records")})
			if err != nil || a.RecordErr != nil {
				b.Fatal(err, a.RecordErr)
			}
			res = a.Result
		} else {
			res = runner.Run(context.Background(), opts)
		}
		total += time.Since(start)
		if res.Status != events.Confirmed {
			b.Fatalf("status %s", res.Status)
		}
		firstEnd := o.end
		if n > 100 {
			firstEnd = o.starts[100]
		}
		first += firstEnd.Sub(o.starts[0])
		last += o.end.Sub(o.starts[len(o.starts)-100])
	}
	runs := float64(b.N)
	reportCPU(b, cpu, switches, b.N*n)
	b.ReportMetric(float64(total.Microseconds())/1000/runs/float64(n), "ms/step")
	b.ReportMetric(float64(first.Microseconds())/1000/runs/100, "first100-ms/step")
	b.ReportMetric(float64(last.Microseconds())/1000/runs/100, "last100-ms/step")
}

// stepTimes notes when each step started and when the last one ended.
type stepTimes struct {
	starts []time.Time
	end    time.Time
}

func (o *stepTimes) Emit(e events.Event) {
	switch e.Type {
	case events.StepStarted:
		o.starts = append(o.starts, e.Time)
	case events.StepFinished:
		o.end = e.Time // the last step's end, once the run is over
	}
}
