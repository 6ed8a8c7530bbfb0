package records_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// The runner emits to a Writer as it goes; `lockstep attempts` reads the
// records back, as data that package views renders.
func Example() {
	root, _ := os.MkdirTemp("", "records")
	defer os.RemoveAll(root)

	w, err := records.Open(root, "web")
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	step := events.Step{Addr: "run.smoke", Kind: "run", Name: "smoke", Count: 1, Target: "local"}
	for _, e := range []events.Event{
		{Type: events.AttemptStarted, Time: t0, Start: &events.Start{Note: "first try", Steps: []events.Step{step}}},
		{Type: events.StepStarted, Time: t0, Step: &step},
		{Type: events.StepFinished, Time: t0.Add(time.Second), Step: &step, Outcome: &events.Outcome{
			Status: events.Failed, Reason: "exit status 1", ErrorMessage: "the smoke test failed", Duration: time.Second}},
		{Type: events.AttemptFinished, Time: t0.Add(time.Second), Outcome: &events.Outcome{
			Status: events.Failed, Failed: "run.smoke", ErrorMessage: "the smoke test failed", Duration: time.Second}},
	} {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	atts, err := records.List(root, "web")
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range records.Tables(atts, nil) {
		for _, r := range t.Rows {
			fmt.Printf("%s attempt %d (%s): %s in %s: %s\n", r.Plan, r.Attempt, r.Note, r.Status, r.FailedStep, r.Why)
		}
	}
	fmt.Println(atts[0].Verdict())
	// Output:
	// web attempt 1 (first try): failed in run.smoke: the smoke test failed
	// failed in run.smoke: the smoke test failed
}
