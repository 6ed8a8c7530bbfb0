package runner

import (
	"context"
	"fmt"
	"path/filepath"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// Recorded is what RunRecorded needs beyond Options: where the record
// goes and who hears about it. The command line and the MCP server run
// attempts the same way through it.
type Recorded struct {
	Options
	// Records is the records root (records.Root) the attempt is kept under.
	Records string
	// Opened, when set, is called once the record is open, before the
	// first step: the attempt's number is known from here.
	Opened func(w *records.Writer)
	// RecordFailed hears every failed write to the record; the run goes
	// on, but its verdict will not be kept.
	RecordFailed func(error)
	// PlanNotKept hears that the copy of the plan could not be saved.
	PlanNotKept func(error)
	// NotKept words the verdict's not_kept line for attempt n, whose
	// record is not whole (the command line adds its exit status); nil:
	// "the record of attempt N is incomplete".
	NotKept func(n int) string
}

// Attempted is how a recorded attempt ended.
type Attempted struct {
	Number int
	Dir    string
	Result Result
	// RecordErr is set when the record could not be written in full: the
	// run has no verdict to keep, whatever Result says.
	RecordErr error
}

// RunRecorded runs one attempt of o.Plan and keeps its record under
// o.Records. o.Observer (the view) sees every event, but the attempt's
// verdict only once the record is closed, saying whether it was kept in
// full: a view never shows "confirmed" for a record that is not whole.
// Targets and LogDir default to the plan's targets and the record's logs
// folder. The error is for a record that could not be opened: then
// nothing ran.
func RunRecorded(ctx context.Context, o Recorded) (Attempted, error) {
	w, err := records.Open(o.Records, o.Plan.Name)
	if err != nil {
		return Attempted{}, err
	}
	if o.RecordFailed != nil {
		w.OnError(o.RecordFailed)
	}
	if err := w.SavePlan(o.Plan.Source); err != nil && o.PlanNotKept != nil {
		o.PlanNotKept(err)
	}
	if o.Opened != nil {
		o.Opened(w)
	}
	view := o.Observer
	if view == nil {
		view = events.Observers{}
	}
	final := &heldVerdict{next: view}
	opts := o.Options
	opts.Observer = events.Observers{w, final}
	opts.Attempt = w.Number()
	if opts.Targets == nil {
		opts.Targets = OpenTarget(o.Plan, o.Scope)
	}
	if opts.History == "" {
		opts.History = o.Records
	}
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(w.Dir(), "logs")
	}
	res := Run(ctx, opts)
	werr := w.Close()
	if werr != nil {
		why := fmt.Sprintf("the record of attempt %d is incomplete", w.Number())
		if o.NotKept != nil {
			why = o.NotKept(w.Number())
		}
		final.notKept(why)
	}
	final.show()
	return Attempted{Number: w.Number(), Dir: w.Dir(), Result: res, RecordErr: werr}, nil
}

// heldVerdict passes every event on to the view but the attempt's
// verdict, which it holds until show: the verdict shown must say whether
// the record that keeps it is whole.
type heldVerdict struct {
	next  events.Observer
	final *events.Event
}

func (h *heldVerdict) Emit(e events.Event) {
	if e.Type == events.AttemptFinished && e.Outcome != nil {
		h.final = &e
		return
	}
	h.next.Emit(e)
}

func (h *heldVerdict) notKept(why string) {
	if h.final != nil {
		o := *h.final.Outcome
		o.NotKept = why
		h.final.Outcome = &o
	}
}

func (h *heldVerdict) show() {
	if h.final != nil {
		h.next.Emit(*h.final)
		h.final = nil
	}
}
