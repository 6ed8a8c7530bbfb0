package records

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lockstep/runner/events"
)

// A record whose writes fail for a while: the run goes on, the first
// error is told once, the record says where it lost events once writing
// works again, and Close says what was lost.
func TestWriterCountsWhatItLost(t *testing.T) {
	w, err := Open(t.TempDir(), "lossy")
	if err != nil {
		t.Fatal(err)
	}
	var told []error
	w.OnError(func(err error) { told = append(told, err) })
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := &events.Step{Addr: "run.a", Kind: "run", Name: "a", Count: 2}
	b := &events.Step{Addr: "run.b", Kind: "run", Name: "b", Index: 1, Count: 2}
	w.Emit(events.Event{Type: events.AttemptStarted, Time: t0, Start: &events.Start{Steps: []events.Step{*a, *b}}})
	w.Emit(events.Event{Type: events.StepStarted, Time: t0, Step: a})

	// Writes fail (as on a full disk or a file made immutable).
	good := w.f
	bad, err := os.Open(good.Name()) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	w.f = bad
	w.Emit(events.Event{Type: events.StepFinished, Time: t0.Add(time.Second), Step: a, Outcome: &events.Outcome{Status: events.Confirmed}})
	w.Emit(events.Event{Type: events.StepStarted, Time: t0.Add(time.Second), Step: b})
	w.f = good
	bad.Close()
	w.Emit(events.Event{Type: events.StepFinished, Time: t0.Add(2 * time.Second), Step: b, Outcome: &events.Outcome{Status: events.Confirmed}})
	w.Emit(events.Event{Type: events.AttemptFinished, Time: t0.Add(2 * time.Second), Outcome: &events.Outcome{Status: events.Confirmed}})

	err = w.Close()
	var inc *IncompleteError
	if !errors.As(err, &inc) {
		t.Fatalf("Close = %v, want an *IncompleteError", err)
	}
	if inc.Lost != 2 || len(inc.Steps) != 1 || inc.Steps[0] != "run.a" || inc.End || inc.Gone || inc.Err == nil {
		t.Errorf("lost %+v", inc)
	}
	if msg := err.Error(); !strings.Contains(msg, "the record of attempt 1 is incomplete; lost: 2 events (the outcome of run.a): write record of attempt 1") {
		t.Errorf("message %q", msg)
	}
	if len(told) != 1 {
		t.Errorf("OnError told %d times, want once: %v", len(told), told)
	}
	att, err := Load(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(att.Warnings) != 1 || !strings.Contains(att.Warnings[0].Message, "the record lost 2 events from 10:00:01.000 on") {
		t.Errorf("the record does not say what it lost: %+v", att.Warnings)
	}
	if att.Outcome.Status != events.Confirmed || att.Steps[1].Status != events.Confirmed || att.Steps[0].Outcome != nil {
		t.Errorf("what was written: %+v", att)
	}
}

// A record removed under the run (rm -rf .lockstep) is written to no one:
// Close says the whole record is lost.
func TestWriterNoticesItsFileRemoved(t *testing.T) {
	root := t.TempDir()
	w, err := Open(root, "gone")
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(events.Event{Type: events.AttemptStarted, Start: &events.Start{}})
	if err := os.RemoveAll(filepath.Join(root, "attempts")); err != nil {
		t.Fatal(err)
	}
	w.Emit(events.Event{Type: events.AttemptFinished, Outcome: &events.Outcome{Status: events.Confirmed}})
	var inc *IncompleteError
	if err := w.Close(); !errors.As(err, &inc) || !inc.Gone || inc.Lost != 0 {
		t.Fatalf("Close = %v (%+v), want the whole record lost", err, inc)
	}
}

// A clean interrupt is not a killed run: the step's own reason shows, and
// the metrics it measured are kept and marked partial.
func TestShowAnInterruptedBenchmark(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := events.Step{Addr: "benchmark.load", Kind: "benchmark", Name: "load", Count: 1}
	a := &Attempt{Plan: "p", Number: 1, Started: t0, Finished: t0.Add(time.Minute),
		Outcome: events.Outcome{Status: events.Interrupted, Reason: "interrupted by SIGINT (Ctrl-C)", Failed: st.Addr},
		Steps: []*Step{{Step: st, Status: events.Interrupted, Started: t0, Finished: t0.Add(time.Minute), Outcome: &events.Outcome{
			Status: events.Interrupted, Reason: "interrupted by SIGINT (Ctrl-C)", Partial: true, Metrics: map[string]float64{"requests_per_s": 812.5},
		}}}}
	out, err := Show(a, "text")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p attempt 1: interrupted\n", "reason   interrupted by SIGINT (Ctrl-C)", "metrics  partial: what was measured until the step was cut short", "812.5 (partial)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "killed") {
		t.Errorf("a clean interrupt shows as killed:\n%s", out)
	}
	whole := &Attempt{Plan: "p", Number: 2, Outcome: events.Outcome{Status: events.Confirmed},
		Steps: []*Step{{Step: st, Status: events.Confirmed, Outcome: &events.Outcome{Status: events.Confirmed, Metrics: map[string]float64{"requests_per_s": 1000}}}}}
	if d, err := Diff(a, whole, "text"); err != nil || !strings.Contains(d, "812.5 (partial)") {
		t.Errorf("diff does not mark the partial value: %v\n%s", err, d)
	}
	table, err := Table([]*Attempt{a}, "json")
	if err != nil || !strings.Contains(table, `"partial_metrics": [`) {
		t.Errorf("table json: %v\n%s", err, table)
	}
}
