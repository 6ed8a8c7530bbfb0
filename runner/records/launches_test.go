package records_test

import (
	"testing"
	"time"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// record writes one attempt of plan "p" under root from evs.
func record(t *testing.T, root string, evs ...events.Event) int {
	t.Helper()
	w, err := records.Open(root, "p")
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(events.Event{Type: events.AttemptStarted, Version: events.Version, Time: time.Now(), Start: &events.Start{}})
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		w.Emit(e)
	}
	w.Emit(events.Event{Type: events.AttemptFinished, Time: time.Now(), Outcome: &events.Outcome{Status: events.Confirmed}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Number()
}

func TestLaunches(t *testing.T) {
	root := t.TempDir()
	launch := &events.Step{Addr: "launch.server", Kind: "launch", Name: "server"}
	held := &events.Held{Target: "local", HeldProcess: events.HeldProcess{PID: 812, PGID: 812, StartTime: 4242, Mark: "00ab12cd34ef", Log: "/tmp/s.log", LogID: "1:2"}}
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// 1: launched and kept; 2: launched another, stopped at its end; 3:
	// adopted attempt 1's, killed before its end (no cleanup).
	record(t, root,
		events.Event{Type: events.StepAction, Step: launch, Time: since, Action: &events.Action{Command: "serve", PID: 812, Process: held}},
		events.Event{Type: events.ProcessStopped, Step: launch, Cleanup: &events.Cleanup{PID: 812, Kept: true, Process: held}},
	)
	other := *held
	other.PID, other.StartTime = 900, 5000
	record(t, root,
		events.Event{Type: events.StepAction, Step: launch, Action: &events.Action{Command: "serve", PID: 900, Process: &other}},
		events.Event{Type: events.ProcessStopped, Step: launch, Cleanup: &events.Cleanup{PID: 900, Result: "stopped"}},
	)
	w, err := records.Open(root, "p")
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(events.Event{Type: events.AttemptStarted, Version: events.Version, Time: time.Now(), Start: &events.Start{From: "benchmark.load"}})
	w.Emit(events.Event{Type: events.StepAction, Step: launch, Time: time.Now(), Action: &events.Action{Command: "serve", PID: 812, Process: held, Adopted: &events.Adoption{Attempt: 1, PID: 812, Found: "the record of attempt 1", Since: since}}})
	w.Close()

	ls, err := records.Launches(root, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 {
		t.Fatalf("Launches = %+v, want 3", ls)
	}
	newest, mid, first := ls[0], ls[1], ls[2]
	if newest.Attempt != 3 || newest.Origin() != 1 || newest.Kept || newest.Stopped || !newest.Since.Equal(since) || newest.Held.StartTime != 4242 {
		t.Errorf("attempt 3's launch = %+v: want adopted from 1, neither kept nor stopped, since attempt 1's launch", newest)
	}
	if mid.Attempt != 2 || !mid.Stopped || mid.Kept {
		t.Errorf("attempt 2's launch = %+v: want stopped", mid)
	}
	if first.Attempt != 1 || !first.Kept || first.Origin() != 1 || first.Command != "serve" {
		t.Errorf("attempt 1's launch = %+v: want kept", first)
	}
	a, err := records.Load(records.AttemptDir(root, "p", 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Resumed(); got != "--from benchmark.load; adopted pid 812 from 1" {
		t.Errorf("Resumed = %q", got)
	}
}
