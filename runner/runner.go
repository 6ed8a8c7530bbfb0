package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/targets"
)

// Options is everything one attempt needs.
type Options struct {
	Plan  *plans.Plan
	Scope *plans.Scope
	// Targets opens the plan's targets by name; the runner asks for each
	// when a step first needs it.
	Targets TargetOpener
	// Observer receives every event, in order.
	Observer events.Observer
	Attempt  int
	// Start carries what only the caller knows (host, user, note, args);
	// the runner adds the plan's hash, variables and steps.
	Start events.Start
	// Keep leaves launched processes running at the end, as keep = true
	// on every launch would.
	Keep bool
	// LogDir is where a launch on the local target writes its log when the
	// plan names none.
	LogDir string
	// StopGrace is how long a stopped process group has between SIGTERM
	// and SIGKILL.
	StopGrace time.Duration
	// Force, when it ends, cuts short what still runs after an interrupt:
	// the steps marked always (a second Ctrl-C). Cleanup of launched
	// processes still happens. Nil: always steps run to their timeouts.
	Force context.Context
	// Part is the part of the plan the run runs (--from, --only): the
	// steps it re-confirms take no action. The zero Part is the whole plan.
	Part plans.Part
	// Stop stops at the end the processes the run adopted, which are
	// otherwise left running as they were found.
	Stop bool
	// History is the records root holding the plan's earlier attempts,
	// where a launch finds the process it adopts; "" for none.
	History string
}

// Result is how an attempt ended.
type Result struct {
	Status events.Status
	Failed string // the address of the step that failed, if one did
}

// ExitCode maps an attempt's status to lockstep's exit codes: 0
// confirmed, 1 a step failed, 130 interrupted (the command line, which
// knows the signal that came, makes that 128 + its number).
func (r Result) ExitCode() int {
	switch r.Status {
	case events.Confirmed:
		return 0
	case events.Interrupted:
		return 130
	}
	return 1
}

// interruptReason says why ctx, an attempt's context, ended: the cause it
// was cancelled with ("interrupted by SIGTERM"), else "interrupted".
func interruptReason(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
		return c.Error()
	}
	return "interrupted"
}

// run is one attempt in progress.
type run struct {
	o       Options
	emit    func(events.Event)
	started time.Time

	mu       sync.Mutex // guards launched, left and seq: the watcher reads them
	launched []*launched
	left     []*leftover // what commands left running, not watched
	seq      int         // launches and leftovers so far, for cleanup's order

	outputs map[string]cty.Value    // step address (launch.server) -> self outputs
	since   map[string][]sinceProbe // sinceProbes, once found
	targets map[string]targets.Target
	// guard redacts sensitive values in what the world says (guard.go).
	guard *guard
	http  *probes.HTTPClients
	// hist is what the earlier attempts' records say (adopt.go).
	hist history
	// foreign is every answer from a process not of this attempt, by
	// step and probe (served.go), for the run's summary; guarded by mu.
	foreign map[string]events.Served
}

// Run runs the plan once. It returns when every step has ended and every
// launched process not kept has been stopped, also when ctx is cancelled
// (Ctrl-C): then the remaining steps marked always still run, bounded by
// their own timeouts. A cause ctx is cancelled with
// (context.WithCancelCause) is the interrupted steps' and the attempt's
// reason: "interrupted by SIGHUP (the terminal closed)".
func Run(ctx context.Context, o Options) Result {
	if o.StopGrace == 0 {
		o.StopGrace = 5 * time.Second
	}
	r := &run{
		o:       o,
		started: time.Now(),
		outputs: map[string]cty.Value{},
		targets: map[string]targets.Target{},
		guard:   newGuard(o.Scope.Secrets()),
		http:    probes.NewHTTPClients(),
	}
	// The watcher emits too (a launch found to have daemonized).
	var emitMu sync.Mutex
	r.emit = func(e events.Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		e.Plan = o.Plan.Name
		e.Attempt = o.Attempt
		if o.Observer != nil {
			o.Observer.Emit(e)
		}
	}
	r.emit(events.Event{Type: events.AttemptStarted, Version: events.Version, Start: r.startInfo()})

	res := Result{Status: events.Confirmed}
	var firstFailure *events.Outcome
	for i, st := range o.Plan.Steps {
		ev := r.stepEvent(i, st)
		if o.Part.Mode(ev.Addr) == plans.Leave {
			r.emit(events.Event{Type: events.StepFinished, Step: &ev, Outcome: &events.Outcome{Status: events.Skipped, Reason: "--only leaves it out"}})
			continue
		}
		if ctx.Err() != nil && res.Status == events.Confirmed {
			// Interrupted between two steps (or before the first): no
			// step was cut short, and none but the always steps runs.
			res.Status = events.Interrupted
		}
		if res.Status != events.Confirmed && !st.Always {
			reason := "an earlier step did not confirm"
			if res.Status == events.Interrupted && res.Failed == "" {
				reason = "the run was " + interruptReason(ctx) + " before this step"
			}
			r.emit(events.Event{Type: events.StepFinished, Step: &ev, Outcome: &events.Outcome{Status: events.Skipped, Reason: reason}})
			continue
		}
		sctx := ctx
		if ctx.Err() != nil {
			// Interrupted: an always step still runs, on its own timeout,
			// unless the user insists (Force).
			sctx = context.WithoutCancel(ctx)
			if o.Force != nil {
				sctx = o.Force
			}
		}
		out := r.step(sctx, ctx, i, st, ev)
		if !out.Status.OK() && res.Status == events.Confirmed {
			res.Status, res.Failed = out.Status, ev.Addr
			if out.Status != events.Interrupted {
				res.Status = events.Failed
			}
			o := out
			firstFailure = &o
		}
	}
	if ctx.Err() != nil && res.Status != events.Interrupted {
		res.Status = events.Interrupted
	}
	r.cleanup(context.WithoutCancel(ctx))
	for _, t := range r.targets {
		t.Close()
	}

	final := &events.Outcome{Status: res.Status, Failed: res.Failed, Duration: time.Since(r.started)}
	if firstFailure != nil {
		final.Reason, final.ErrorMessage = firstFailure.Reason, firstFailure.ErrorMessage
	}
	r.mu.Lock()
	final.ServedBy = r.foreign
	r.mu.Unlock()
	if res.Status == events.Interrupted {
		// The record says why the run ended, also when a step had failed
		// before the signal came.
		final.Reason = interruptReason(ctx)
		if firstFailure != nil && firstFailure.Status != events.Interrupted {
			final.Reason += "; " + res.Failed + " had failed: " + firstFailure.Reason
		}
	}
	r.emit(events.Event{Type: events.AttemptFinished, Outcome: final})
	return res
}

func (r *run) target(name string) (targets.Target, error) {
	if t, ok := r.targets[name]; ok {
		return t, nil
	}
	t, err := r.o.Targets(name, r.emit)
	if err != nil {
		return nil, fmt.Errorf("target %s: %s", name, r.guard.text(err.Error()))
	}
	r.targets[name] = t
	return t, nil
}

func (r *run) addLaunch(l *launched) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	l.seq = r.seq
	r.launched = append(r.launched, l)
}

func (r *run) addLeftover(lo *leftover) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	lo.seq = r.seq
	r.left = append(r.left, lo)
}

func (r *run) leftovers() []*leftover {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*leftover(nil), r.left...)
}

func (r *run) launches() []*launched {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*launched(nil), r.launched...)
}

func (r *run) launch(addr string) *launched {
	for _, l := range r.launches() {
		if l.addr == addr {
			return l
		}
	}
	return nil
}

// stepRef turns a launch address a probe names into what the probe needs.
func (r *run) stepRef(addr string) (*probes.Launch, error) {
	l := r.launch(addr)
	if l == nil {
		return nil, fmt.Errorf("step.%s launched no process", addr)
	}
	return &probes.Launch{Addr: l.addr, Process: l.current, Log: l.proc.Log, Marks: l.marks}, nil
}

func (r *run) startInfo() *events.Start {
	s := r.o.Start
	sum := sha256.Sum256(r.o.Plan.Source)
	s.PlanFile = r.o.Plan.Filename
	s.PlanSHA256 = hex.EncodeToString(sum[:])
	s.Vars = map[string]string{}
	s.Defaults = map[string]string{}
	for _, v := range r.o.Plan.Variables {
		if val, ok := r.o.Scope.Vars[v.Name]; ok {
			s.Vars[v.Name] = Render(val)
			if v.Sensitive {
				s.Vars[v.Name] = redacted
			}
		}
		if v.Default != cty.NilVal {
			s.Defaults[v.Name] = Render(v.Default)
			if v.Sensitive {
				s.Defaults[v.Name] = redacted
			}
		}
	}
	for i, st := range r.o.Plan.Steps {
		s.Steps = append(s.Steps, r.stepEvent(i, st))
	}
	r.partStart(&s)
	return &s
}
