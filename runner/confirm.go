package runner

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/steps"
)

// historyLen is how many observations a step keeps to show how its state
// moved when it fails.
const historyLen = 8

// heartbeat is how often an unchanged observation is emitted again.
const heartbeat = 10 * time.Second

// turn is what one evaluation of a step's conditions decided.
type turn struct {
	conds   []events.Condition
	values  map[string]string
	aborted *events.Condition
	errored *events.Condition // the first condition that failed on known values
	allHeld bool
}

// confirm is the confirm loop: observe, evaluate, and either decide or
// wait for the next interval or for a followed log to grow.
func (s *stepRun) confirm(ctx, outer context.Context, single bool) events.Outcome {
	// The kind's decoder refuses a zero interval (it would spin).
	interval := time.Duration(s.cfg.Step().Interval)
	var last turn
	// stopped decides a step whose context ended: at the deadline it timed
	// out, judged on the last complete observation (a probe cut short by
	// the deadline tells nothing); otherwise it was interrupted or a
	// watched process died.
	stopped := func() events.Outcome {
		if context.Cause(ctx) == context.DeadlineExceeded && outer.Err() == nil {
			if last.conds == nil {
				last = s.evaluate(s.evalContext(s.r.o.Scope))
			}
			return s.finish(s.unmet(events.TimedOut, fmt.Sprintf("timed out after %s", s.ev.Timeout), last), last)
		}
		return s.finish(s.ended(ctx, outer), last)
	}
	for {
		if ctx.Err() != nil {
			return stopped()
		}
		s.observe(ctx)
		if ctx.Err() != nil {
			return stopped()
		}
		// One context per turn: every condition and the progress read the
		// same observation, and the step root and self are built once.
		ectx := s.evalContext(s.r.o.Scope)
		if reason := s.permanent(); reason != "" {
			return s.finish(events.Outcome{Status: events.Failed, Reason: reason}, s.evaluate(ectx))
		}
		last = s.evaluate(ectx)
		s.progress(ectx)
		if s.limit != nil {
			// Evaluating again would meet the same limit: fail now.
			return s.finish(events.Outcome{Status: events.Failed, Reason: s.limit.Error()}, last)
		}
		if last.aborted != nil {
			return s.finish(events.Outcome{Status: events.Aborted, Reason: "abort_if held: " + last.aborted.Source, ErrorMessage: last.aborted.ErrorMessage}, last)
		}
		if c := last.errored; c != nil {
			return s.finish(events.Outcome{Status: events.Errored, Reason: c.Kind + " error: " + c.Reason}, last)
		}
		if last.allHeld {
			return s.finish(events.Outcome{Status: events.Confirmed}, last)
		}
		if single {
			return s.finish(s.unmet(events.Failed, "", last), last)
		}
		// Only a turn that decided nothing is waiting; the one that
		// decides is told by the outcome.
		s.note(last)
		if !s.waitNext(ctx, interval) {
			return stopped()
		}
	}
}

// unmet explains a step that ended with conditions not held: the first
// false one (or not yet decided one) and its error_message; an abort_if
// not yet decided only when every postcondition held.
func (s *stepRun) unmet(status events.Status, reason string, t turn) events.Outcome {
	out := events.Outcome{Status: status, Reason: reason}
	var first *events.Condition
	for i, c := range t.conds {
		switch {
		case c.Kind == "abort_if":
			if (c.State == events.CondNotYet || c.State == events.CondError) && first == nil {
				first = &t.conds[i]
			}
			continue
		case c.State == events.CondHeld:
			continue
		}
		first = &t.conds[i]
		break
	}
	if first == nil {
		return out
	}
	c := *first
	what := "condition not met: " + c.Source
	switch {
	case c.State == events.CondError:
		what = c.Kind + " error: " + c.Reason
	case c.Kind == "abort_if":
		what = "abort_if could not be evaluated: " + c.Source + " (" + c.Reason + ")"
	case c.State == events.CondNotYet:
		what = "condition could not be evaluated: " + c.Source + " (" + c.Reason + ")"
	case c.Kind == "default" && c.Reason != "":
		what = c.Reason
	}
	if out.Reason == "" {
		out.Reason = what
	} else {
		out.Reason += "; " + what
	}
	if c.Kind != "abort_if" {
		out.ErrorMessage = c.ErrorMessage
	}
	return out
}

func (s *stepRun) finish(out events.Outcome, t turn) events.Outcome {
	ev := s.evidence(&t)
	if out.Evidence != nil && out.Evidence.LogTail != nil {
		ev.LogTail = out.Evidence.LogTail
	}
	out.Evidence = ev
	return out
}

// waitNext waits for the next turn: the interval, or sooner when a
// followed log grew (or, watched, may have). It returns false when the
// step's context ended.
func (s *stepRun) waitNext(ctx context.Context, interval time.Duration) bool {
	next := time.NewTimer(interval)
	defer next.Stop()
	var poll <-chan time.Time
	// A watch of the followed logs (logwatch.go) starts the turn as soon
	// as one may have changed (the turn's observe reads them: one read,
	// not two), at most one turn per every, as polling would; until it is
	// set up, and if it fails, the logs are polled every every, and then
	// only as a net.
	var ready, changed <-chan struct{}
	var soon <-chan time.Time
	every, safety := followEvery, followSafety
	if !isLocal(s.t) {
		every, safety = followEveryRemote, followSafetyRemote
	}
	var w *logWatch
	var tk *time.Ticker // the poll's; set when there are followers
	if len(s.followers) > 0 {
		tk = time.NewTicker(every)
		defer tk.Stop()
		poll = tk.C
		if w = s.watchLogs(ctx); w != nil {
			if ready = w.ready; w.seen {
				ready, changed = nil, w.c
			}
			if changed != nil {
				tk.Reset(safety)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-next.C:
			return true
		case <-ready:
			// Set up: the turn reads what was written before it began.
			w.seen = true
			w.woke = time.Now()
			return true
		case _, ok := <-changed:
			if !ok {
				// The watch ended before the step: poll as before.
				changed, w.c = nil, nil
				tk.Reset(every)
				continue
			}
			if wait := every - time.Since(w.woke); wait > 0 {
				if soon == nil {
					soon = time.After(wait)
				}
				continue
			}
			w.woke = time.Now()
			return true
		case <-soon:
			w.woke = time.Now()
			return true
		case <-poll:
			for _, f := range s.followers {
				if grew, _ := f.Poll(ctx); grew {
					return true
				}
			}
		}
	}
}

// observe reads every probe once, and a launch's own state.
func (s *stepRun) observe(ctx context.Context) {
	for _, np := range s.probes {
		v, err := np.p.Observe(ctx)
		s.probeLeft(np)
		if ctx.Err() != nil {
			// Cut short by the step's end: keep what was last seen.
			return
		}
		if err == nil {
			// What the world returns keeps to the plan's limits too (a
			// number of 1e100000000 in a JSON body would take minutes to
			// print); the error is permanent, so the step fails.
			if lerr := plans.CheckValue(v); lerr != nil {
				err = fmt.Errorf("the observed value is beyond a limit: %w", lerr)
			}
		}
		if err != nil {
			s.values[np.name] = cty.DynamicVal
			s.errs[np.name] = err
			s.cutOff(err)
			continue
		}
		s.values[np.name] = v
		delete(s.errs, np.name)
		s.answered(ctx, np)
	}
	if s.own != nil {
		s.ownLog.Poll(ctx)
		st, err := s.r.state(ctx, s.own)
		if err == nil {
			s.self["alive"] = cty.BoolVal(st.Alive)
			s.following = st.following
		} else {
			// Not what was last seen: a launch must not confirm, nor a
			// condition hold, on a look that could not be made.
			s.self["alive"] = cty.UnknownVal(cty.Bool)
		}
		s.cutOff(err)
		for k, v := range daemonOutputs(s.own) {
			s.self[k] = v
		}
	}
}

// permanent is a probe error that waiting cannot cure (no GPU driver),
// as shown.
func (s *stepRun) permanent() string {
	if s.lost != nil {
		return "the host was cut off: " + s.r.guard.text(s.lost.Error())
	}
	for _, np := range s.probes {
		if err := s.errs[np.name]; err != nil && probes.Permanent(err) {
			return "probe." + np.name + ": " + s.probeError(np.name)
		}
	}
	return ""
}

// probeError is why a probe could not be read, as shown: its sensitive
// inputs as they were shown (a URL with a token in it), and what the
// world said guarded.
func (s *stepRun) probeError(name string) string {
	err := s.errs[name]
	if err == nil {
		return ""
	}
	if red := s.probeInputs[name]; red != nil {
		return red.text(err.Error())
	}
	return s.r.guard.text(err.Error())
}

// evaluate decides every abort_if and postcondition against the latest
// observation, in ectx.
func (s *stepRun) evaluate(ectx *hcl.EvalContext) turn {
	t := turn{values: map[string]string{}, allHeld: true}
	errored := func(res events.Condition) {
		if res.State == events.CondError && t.errored == nil {
			t.errored = &res
		}
	}
	for _, c := range s.st.AbortIfs {
		res := s.cond("abort_if", c, ectx, t.values)
		t.conds = append(t.conds, res)
		if res.State == events.CondHeld && t.aborted == nil {
			r := res
			t.aborted = &r
		}
		// A step confirms only once each abort_if is decided false: one
		// that cannot be evaluated yet has not been checked.
		if res.State != events.CondFalse {
			t.allHeld = false
		}
		errored(res)
	}
	for _, c := range s.defaults() {
		t.conds = append(t.conds, c)
		if c.State != events.CondHeld {
			t.allHeld = false
		}
	}
	for _, c := range s.st.Postconditions {
		res := s.cond("postcondition", c, ectx, t.values)
		t.conds = append(t.conds, res)
		if res.State != events.CondHeld {
			t.allHeld = false
		}
		errored(res)
	}
	return t
}

// defaults are the conditions a kind brings without being written (a
// run exits 0, a launch's process is alive after its grace period),
// judged on this turn's observation.
func (s *stepRun) defaults() []events.Condition {
	return s.adoptedConditions(s.cfg.Conditions(steps.Observed{
		Self: s.self,
		ReadsSelf: func(name string) bool {
			for _, c := range s.st.Postconditions {
				if c.Refs.ReadsSelf(name) {
					return true
				}
			}
			return false
		},
		Following: s.following,
		Elapsed:   s.elapsed(),
	}))
}

// cond evaluates one condition. A value that cannot be known yet (a probe
// that could not read, a null, a missing key) is "not yet", with the
// reason kept, never "false"; an error on known values (evalerr.go) is an
// error, with the place and the text of the error.
func (s *stepRun) cond(kind string, c *plans.Condition, ectx *hcl.EvalContext, values map[string]string) events.Condition {
	res := events.Condition{Kind: kind, Source: c.Source, Range: rangeString(c.DeclRange)}
	if c.ErrorMessage != nil {
		if sh, diags := plans.Show(c.ErrorMessage, ectx); !diags.HasErrors() {
			res.ErrorMessage = strings.TrimSpace(sh.Text)
			s.r.guard.add(sh.Hidden...)
		}
	}
	referenced(c.Refs, ectx, values, s.r.guard)
	if d := knownFailure(plans.PatternErrors(c.Condition, ectx)); d != nil {
		res.State, res.Reason = events.CondError, s.r.guard.text(diagWhere(d))
		return res
	}
	v, diags := c.Condition.Value(ectx)
	s.exceeded(kind, c.Source, diags)
	if d := knownFailure(diags); d != nil {
		res.State, res.Reason = events.CondError, s.r.guard.text(diagWhere(d))
		return res
	}
	if reason := s.probeErrors(c.Refs); reason != "" && (diags.HasErrors() || !v.IsWhollyKnown()) {
		res.State, res.Reason = events.CondNotYet, reason
		return res
	}
	if diags.HasErrors() {
		// hcl may quote a value it could not use: guarded.
		res.State, res.Reason = events.CondNotYet, s.r.guard.text(diagText(diags))
		return res
	}
	v, _ = v.UnmarkDeep()
	switch {
	case !v.IsKnown():
		res.State, res.Reason = events.CondNotYet, "not known yet"
	case v.IsNull() && observed(c.Refs):
		res.State, res.Reason = events.CondNotYet, "the condition is null"
	case v.IsNull():
		res.State, res.Reason = events.CondError, rangeString(c.Condition.Range())+": the condition is null, and it reads nothing that waiting could change"
	default:
		b, err := convert.Convert(v, cty.Bool)
		switch {
		case err != nil:
			res.State, res.Reason = events.CondError, rangeString(c.Condition.Range())+": the condition is not a bool: "+err.Error()
		case b.True():
			res.State = events.CondHeld
		default:
			res.State = events.CondFalse
		}
	}
	return res
}

// diagWhere is an error with the place it is about: "plan.hcl:14:30:
// Invalid function argument: ...".
func diagWhere(d *hcl.Diagnostic) string {
	text := diagText(hcl.Diagnostics{d})
	if d.Subject != nil {
		return rangeString(*d.Subject) + ": " + text
	}
	return text
}

// exceeded keeps the first limit an expression of the step met (range
// asked for a billion elements, arithmetic went beyond a 64-bit float's
// range): the step fails with it, as waiting would meet it again.
func (s *stepRun) exceeded(kind, source string, diags hcl.Diagnostics) {
	err := plans.ExceedsLimit(diags)
	if err == nil || s.limit != nil {
		return
	}
	if source != "" {
		kind += " " + source
	}
	s.limit = fmt.Errorf("%s: %w", kind, err)
}

// probeErrors are the reasons the probes an expression reads could not be
// observed: "probe.health: dial tcp 127.0.0.1:8000: connection refused".
func (s *stepRun) probeErrors(refs plans.Refs) string {
	var out []string
	for _, name := range refs.Probes() {
		if msg := s.probeError(name); msg != "" {
			out = append(out, "probe."+name+": "+msg)
		}
	}
	return strings.Join(out, "; ")
}

func rangeString(r hcl.Range) string {
	if r.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// summary is one line telling where a step stands: the values its unmet
// conditions read, or why they could not be read.
func summary(t turn) string {
	var parts []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	for _, c := range t.conds {
		if c.State == events.CondHeld && c.Kind != "abort_if" {
			continue
		}
		if c.Kind == "abort_if" && c.State == events.CondFalse {
			continue
		}
		if c.Kind == "abort_if" && c.State == events.CondNotYet {
			add("abort_if not decided yet: " + c.Reason)
			continue
		}
		if c.Reason != "" {
			add(c.Reason)
			continue
		}
		add("not met: " + c.Source)
	}
	if len(parts) == 0 {
		return "all conditions hold"
	}
	return strings.Join(parts, "; ")
}

// note emits the observation when it changed (or every heartbeat) and
// keeps it in the waiting history.
func (s *stepRun) note(t turn) {
	if t.allHeld && t.aborted == nil {
		return
	}
	sum := summary(t)
	if len(t.values) > 0 && !t.allHeld {
		var vs []string
		for _, k := range slices.Sorted(maps.Keys(t.values)) {
			if strings.HasPrefix(k, "self.log") || strings.HasSuffix(k, ".text") || strings.HasSuffix(k, ".body") || strings.HasSuffix(k, ".lines") {
				continue
			}
			vs = append(vs, k+" = "+t.values[k])
		}
		if len(vs) > 0 {
			sum = strings.Join(vs, ", ") + " — " + sum
		}
	}
	now := time.Now()
	if sum == s.last && now.Sub(s.lastAt) < heartbeat {
		return
	}
	s.last, s.lastAt = sum, now
	s.history = append(s.history, events.Sample{Time: now, Summary: sum})
	if len(s.history) > historyLen {
		s.history = s.history[len(s.history)-historyLen:]
	}
	s.r.emit(events.Event{Type: events.Observed, Step: &s.ev, Observation: &events.Observation{Values: t.values, Conditions: t.conds, Summary: sum}})
}

// progress evaluates the step's progress expression and emits it with the
// last log line.
func (s *stepRun) progress(ectx *hcl.EvalContext) {
	p := &events.Progress{Elapsed: time.Since(s.start)}
	if s.st.Progress != nil {
		v, diags := s.st.Progress.Value(ectx)
		if d := knownFailure(append(plans.PatternErrors(s.st.Progress, ectx), diags...)); d != nil && !s.progressWarned {
			// Progress decides nothing: the step goes on without it, and
			// says so once rather than every turn.
			s.progressWarned = true
			s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: "progress cannot be evaluated: " + s.r.guard.text(diagWhere(d))})
		}
		s.exceeded("progress", "", diags)
		if !diags.HasErrors() {
			v, _ = v.UnmarkDeep()
			if v.IsKnown() && !v.IsNull() {
				if n, err := convert.Convert(v, cty.Number); err == nil {
					f, _ := n.AsBigFloat().Float64()
					f = math.Max(0, math.Min(1, f))
					p.Fraction = &f
					s.cfg.Step().Progress.Value = &f
				}
			}
		}
	}
	for _, f := range s.followers {
		if l := f.LastLine(); l != "" {
			p.LastLine = s.r.guard.text(l)
		}
	}
	if p.Fraction == nil && p.LastLine == "" {
		return
	}
	s.r.emit(events.Event{Type: events.Progressed, Step: &s.ev, Progress: p})
}

// evidence is what decided the step: its conditions, the values they
// read, the last lines of the logs it followed, and its waiting history.
func (s *stepRun) evidence(t *turn) *events.Evidence {
	ev := &events.Evidence{History: s.history}
	if t != nil {
		ev.Conditions = t.conds
		if len(t.values) > 0 {
			ev.Values = t.values
		}
	}
	for _, f := range s.followers {
		ev.LogLines = append(ev.LogLines, s.r.guard.lines(f.Tail(10))...)
	}
	for name := range s.errs {
		if ev.Values == nil {
			ev.Values = map[string]string{}
		}
		ev.Values["probe."+name] = "(" + s.probeError(name) + ")"
	}
	return ev
}
