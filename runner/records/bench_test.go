package records

import (
	"testing"
	"time"

	"lockstep/runner/events"
	"lockstep/runner/records/recordstest"
)

// What Emit costs the runner: an observation (written, not synced) and a
// step's end (written and synced).
func BenchmarkEmit(b *testing.B) {
	step := &recordstest.Steps[1]
	b.Run("observed", func(b *testing.B) {
		w, _ := Open(b.TempDir(), "bench")
		defer w.Close()
		for i := 0; b.Loop(); i++ {
			w.Emit(events.Event{Type: events.Observed, Time: recordstest.At(time.Duration(i) * observeEvery), Step: step,
				Observation: &events.Observation{Summary: "probe.health.status = 503", Values: map[string]string{"probe.health.status": "503"}}})
		}
	})
	b.Run("observed-repeat", func(b *testing.B) {
		w, _ := Open(b.TempDir(), "bench")
		defer w.Close()
		for b.Loop() {
			w.Emit(events.Event{Type: events.Observed, Time: recordstest.T0, Step: step,
				Observation: &events.Observation{Summary: "probe.health.status = 503", Values: map[string]string{"probe.health.status": "503"}}})
		}
	})
	b.Run("step_finished", func(b *testing.B) {
		w, _ := Open(b.TempDir(), "bench")
		defer w.Close()
		for b.Loop() {
			w.Emit(events.Event{Type: events.StepFinished, Time: recordstest.T0, Step: step, Outcome: &events.Outcome{Status: events.Confirmed}})
		}
	})
}
