package views

import (
	"fmt"

	"lockstep/runner/events"
	"lockstep/terminal"
)

// Progress is how far a run is, for a client that shows a progress bar
// (an MCP client's progress notifications): Done of Total steps, a step's
// fraction in between, and a message. Total is 0 when the event does not
// say (the attempt's end): the caller keeps the last it had.
type Progress struct {
	Done, Total float64
	Message     string
}

// ProgressOf is the progress an event tells, if any: a step started, a
// fraction of one, a step or the attempt finished.
func ProgressOf(e events.Event) (Progress, bool) {
	switch e.Type {
	case events.StepStarted:
		if e.Step == nil {
			return Progress{}, false
		}
		return Progress{float64(e.Step.Index), float64(e.Step.Count),
			fmt.Sprintf("step %d/%d %s: started", e.Step.Index+1, e.Step.Count, e.Step.Addr)}, true
	case events.Progressed:
		if e.Step == nil || e.Progress == nil || e.Progress.Fraction == nil {
			return Progress{}, false
		}
		f := min(max(*e.Progress.Fraction, 0), 1)
		return Progress{float64(e.Step.Index) + f, float64(e.Step.Count),
			fmt.Sprintf("step %d/%d %s: %.0f%%", e.Step.Index+1, e.Step.Count, e.Step.Addr, f*100)}, true
	case events.StepFinished:
		if e.Step == nil || e.Outcome == nil {
			return Progress{}, false
		}
		msg := fmt.Sprintf("step %d/%d %s: %s", e.Step.Index+1, e.Step.Count, e.Step.Addr, e.Outcome.Status)
		if e.Outcome.Reason != "" {
			// A reason can quote what a server wrote.
			msg += " (" + terminal.PrintableCut(e.Outcome.Reason, terminal.MaxShownReason) + ")"
		}
		return Progress{float64(e.Step.Index + 1), float64(e.Step.Count), msg}, true
	case events.AttemptFinished:
		if e.Outcome == nil {
			return Progress{}, false
		}
		msg := fmt.Sprintf("attempt %d of %s: %s", e.Attempt, e.Plan, e.Outcome.Status)
		if e.Outcome.NotKept != "" {
			msg += " (not kept: " + e.Outcome.NotKept + ")"
		}
		return Progress{Message: msg}, true
	}
	return Progress{}, false
}
