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
	// Under the writer's lock: its syncer reads the file as it syncs.
	w.mu.Lock()
	w.f = bad
	w.mu.Unlock()
	w.Emit(events.Event{Type: events.StepFinished, Time: t0.Add(time.Second), Step: a, Outcome: &events.Outcome{Status: events.Confirmed}})
	w.Emit(events.Event{Type: events.StepStarted, Time: t0.Add(time.Second), Step: b})
	w.mu.Lock()
	w.f = good
	w.mu.Unlock()
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
