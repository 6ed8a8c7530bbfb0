package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/steps"
	"lockstep/targets"
)

// A step on a fleet (a target whose ssh block names many hosts) runs as
// one step run per host, each the single-host machinery of step.go with
// its own target and scope (target.host, target.rank, target.hosts), all
// at once or rank 0 first (leader_first). Each host confirms or fails on
// its own evidence, at once; the fleet step then decides by its rule
// (max_failures, min_confirmed), stopping the hosts still running as soon
// as the rule can no longer hold.

// fleetHost is one host of a fleet target, as the attempt opened it.
type fleetHost struct {
	fleet string // the target's name
	name  string // as the plan's hosts names it
	rank  int
	t     targets.Target // nil when it could not be opened
	err   error          // why it could not be
}

// fleet opens the fleet target name once per attempt.
func (r *run) fleet(name string) ([]*fleetHost, error) {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	if hs, ok := r.fleets[name]; ok {
		return hs, nil
	}
	if r.o.Fleets == nil {
		return nil, fmt.Errorf("target %s names many hosts, and this run opens none (no Fleets opener)", name)
	}
	opened, err := r.o.Fleets(name, r.emit)
	if err != nil {
		return nil, fmt.Errorf("target %s: %s", name, r.guard.text(err.Error()))
	}
	hs := make([]*fleetHost, len(opened))
	for i, o := range opened {
		hs[i] = &fleetHost{fleet: name, name: o.Name, rank: i, t: o.Target, err: o.Err}
	}
	r.fleets[name] = hs
	return hs, nil
}

// hostOf names the fleet host a target is, "" for a target of its own.
func (r *run) hostOf(t targets.Target) string {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	for _, hs := range r.fleets {
		for _, h := range hs {
			if h.t == t && t != nil {
				return h.name
			}
		}
	}
	return ""
}

// forHost is the run a step's host h runs in: its scope sees h, its
// steps watch what they launched on h, and its events go out as h's: the
// fleet step tells the start, the waiting and the end for every host at
// once.
func (r *run) forHost(h *fleetHost, names []string) *run {
	c := *r
	c.o.Scope = r.o.Scope.ForHost(h.name, h.rank, names)
	c.outputs = maps.Clone(r.outputs)
	c.host = h
	c.watches = func(l *launched) bool { return l.target == h.t }
	c.emit = func(e events.Event) {
		switch e.Type {
		case events.StepStarted, events.Observed, events.Progressed:
			return
		case events.StepFinished:
			e.Type = events.HostFinished
		}
		e.Host = h.name
		if e.Action != nil {
			a := *e.Action
			a.Host = h.name
			e.Action = &a
		}
		r.emit(e)
	}
	return &c
}

// errRule is the cause the hosts still running are stopped with once the
// fleet step's rule can no longer hold.
type errRule struct{ why string }

func (e *errRule) Error() string { return "stopped: " + e.why }

// fleetStep runs a step on every host of its fleet and decides it by its
// rule. ctx bounds the step; outer is the attempt's context.
func (r *run) fleetStep(ctx, outer context.Context, i int, st *plans.Step, ev events.Step) events.Outcome {
	start := time.Now()
	finish := func(out events.Outcome) events.Outcome {
		out.Duration = time.Since(start)
		r.emit(events.Event{Type: events.StepFinished, Step: &ev, Outcome: &out})
		return out
	}
	hosts, err := r.fleet(st.Target)
	if err != nil {
		r.emit(events.Event{Type: events.StepStarted, Step: &ev})
		return finish(events.Outcome{Status: events.Errored, Reason: err.Error()})
	}
	names := make([]string, len(hosts))
	for _, h := range hosts {
		names[h.rank] = h.name
	}
	// The rule, and the timeout shown, as rank 0 decodes them: a host
	// whose attributes do not decode fails on its own.
	rule := steps.Fleet{}
	scope0 := r.o.Scope.ForHost(names[0], 0, names)
	cfg, _, cfgErr := scope0.StepConfig(st, map[string]cty.Value{"step": r.stepRoot(st.Reads.Steps())})
	if cfgErr == nil {
		rule = cfg.Step().Fleet
		ev.Timeout = time.Duration(cfg.Step().Timeout)
	}
	r.emit(events.Event{Type: events.StepStarted, Step: &ev})
	n := len(hosts)
	maxFailures, minConfirmed := rule.Allowed(n)
	if minConfirmed > n {
		return finish(events.Outcome{Status: events.Errored, Reason: fmt.Sprintf("min_confirmed is %d, but target %s has %d hosts", minConfirmed, st.Target, n)})
	}
	if st.Command != nil {
		r.emit(events.Event{Type: events.StepAction, Step: &ev, Action: &events.Action{Command: r.shownCommand(st, scope0), Hosts: n}})
	}

	hctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// A launch elsewhere (on this machine, on another target) that dies
	// stops every host: each host watches only its own.
	w := *r
	w.watches = func(l *launched) bool {
		for _, h := range hosts {
			if l.target == h.t {
				return false
			}
		}
		return true
	}
	stopWatch := w.watch(hctx, stop)
	defer stopWatch()

	results := make([]*events.HostOutcome, n)
	outputs := make([]cty.Value, n)
	var mu sync.Mutex
	done := func(h *fleetHost, out events.Outcome, self cty.Value) {
		mu.Lock()
		defer mu.Unlock()
		ho := events.HostOf(h.name, h.rank, out)
		results[h.rank] = &ho
		outputs[h.rank] = self
		c := tally(results)
		if c.failed > maxFailures || n-c.failed-c.stopped < minConfirmed {
			stop(&errRule{why: fmt.Sprintf("%s did not confirm, and the step allows %s", hostList(c.failing, c.failed), allowance(maxFailures, minConfirmed, n))})
		}
		// As progress: the live view shows the count as it moves, the
		// plain lines every few seconds, not a line per host.
		frac := float64(c.done) / float64(n)
		r.emit(events.Event{Type: events.Progressed, Step: &ev, Progress: &events.Progress{Elapsed: time.Since(start), Fraction: &frac, LastLine: c.summary(n)}})
	}
	runHost := func(h *fleetHost) {
		if h.err != nil {
			out := events.Outcome{Status: events.Errored, Reason: r.guard.text(h.err.Error())}
			r.emit(events.Event{Type: events.HostFinished, Step: &ev, Host: h.name, Outcome: &out})
			done(h, out, cty.NilVal)
			return
		}
		c := r.forHost(h, names)
		out := c.step(hctx, hctx, i, st, ev)
		done(h, out, c.outputs[ev.Addr])
	}
	rest := hosts
	if bool(rule.LeaderFirst) && n > 1 {
		runHost(hosts[0])
		rest = hosts[1:]
		if lead := results[0]; !lead.Status.OK() {
			for _, h := range rest {
				out := events.Outcome{Status: events.Skipped, Reason: "rank 0 (" + names[0] + ") did not confirm: leader_first"}
				ho := events.HostOf(h.name, h.rank, out)
				results[h.rank] = &ho
			}
			rest = nil
		}
	}
	var wg sync.WaitGroup
	for _, h := range rest {
		wg.Go(func() { runHost(h) })
	}
	wg.Wait()

	kind, _ := steps.Lookup(st.Kind)
	r.outputs[ev.Addr] = plans.FleetOutputs(names, fillSelf(outputs, kind))
	out := decide(results, maxFailures, minConfirmed, n)
	var died *diedError
	switch cause := context.Cause(hctx); {
	case errors.As(cause, &died):
		out.Status, out.Reason = events.Failed, died.Error()+"; "+out.Reason
		out.Evidence = &events.Evidence{LogTail: map[string][]string{died.l.addr: died.tail}}
	case outer.Err() != nil && ctx.Err() != nil && !out.Status.OK():
		out.Status, out.Reason = events.Interrupted, interruptReason(outer)+"; "+out.Reason
	}
	return finish(out)
}

// shownCommand is the step's command as rank 0 runs it, sensitive parts
// hidden: what the fleet step's one action line shows.
func (r *run) shownCommand(st *plans.Step, scope *plans.Scope) string {
	ectx := scope.EvalContext(map[string]cty.Value{"step": r.stepRoot(st.Reads.Steps()), "self": cty.EmptyObjectVal, "probe": cty.EmptyObjectVal})
	sh, diags := plans.Show(st.Command, ectx)
	if diags.HasErrors() {
		return ""
	}
	return sh.Text
}

// fillSelf gives each host's outputs every output of its kind, null
// where the host did not get that far, so [*].pid reads every host.
func fillSelf(outs []cty.Value, kind steps.Kind) []cty.Value {
	filled := make([]cty.Value, len(outs))
	for i, v := range outs {
		m := map[string]cty.Value{}
		if v != cty.NilVal && v.Type().IsObjectType() {
			m = v.AsValueMap()
			if m == nil {
				m = map[string]cty.Value{}
			}
		}
		for _, o := range kind.Self {
			if _, ok := m[o.Name]; !ok {
				m[o.Name] = cty.NullVal(o.Type)
			}
		}
		filled[i] = cty.ObjectVal(m)
	}
	return filled
}

// count is the hosts of a fleet step by how they ended so far.
type count struct {
	confirmed, failed, stopped, done int
	failing                          []string
}

// stoppedByRule says the host was stopped because the step had failed
// anyway, or skipped after its leader failed: not a failure of its own.
func stoppedByRule(o *events.HostOutcome) bool {
	return o.Status == events.Skipped || o.Status == events.Interrupted && strings.HasPrefix(o.Reason, "stopped: ")
}

func tally(results []*events.HostOutcome) count {
	var c count
	for _, o := range results {
		switch {
		case o == nil:
			continue
		case o.Status.OK():
			c.confirmed++
		case stoppedByRule(o):
			c.stopped++
		default:
			c.failed++
			c.failing = append(c.failing, o.Host)
		}
		c.done++
	}
	return c
}

// summary is one line for the fleet: "6/8 hosts confirmed; failed: n3; 1 running".
func (c count) summary(n int) string {
	s := fmt.Sprintf("%d/%d hosts confirmed", c.confirmed, n)
	if c.failed > 0 {
		s += "; failed: " + strings.Join(c.failing, ", ")
	}
	if c.stopped > 0 {
		s += fmt.Sprintf("; %d stopped", c.stopped)
	}
	if left := n - c.done; left > 0 {
		s += fmt.Sprintf("; %d running", left)
	}
	return s
}

// hostList names hosts: "n3", "n3 and n5", "3 hosts (n1, n2, n7)".
func hostList(names []string, n int) string {
	switch n {
	case 1:
		return names[0]
	case 2:
		return names[0] + " and " + names[1]
	}
	return fmt.Sprintf("%d hosts (%s)", n, strings.Join(names, ", "))
}

// allowance says what the rule lets fail, in the plan's words.
func allowance(maxFailures, minConfirmed, n int) string {
	switch {
	case maxFailures == 0:
		return "no host to fail"
	case minConfirmed < n-maxFailures:
		return fmt.Sprintf("%d to fail (max_failures = %d) with %d confirmed (min_confirmed = %d)", maxFailures, maxFailures, minConfirmed, minConfirmed)
	}
	return fmt.Sprintf("%d to fail (max_failures = %d)", maxFailures, maxFailures)
}

// decide is the fleet step's outcome from its hosts': confirmed when the
// rule holds; else the status the failing hosts share (timed_out), or
// failed, with the first failing host's reason and evidence.
func decide(results []*events.HostOutcome, maxFailures, minConfirmed, n int) events.Outcome {
	c := tally(results)
	out := events.Outcome{Hosts: make([]events.HostOutcome, 0, n)}
	for _, o := range results {
		if o != nil {
			out.Hosts = append(out.Hosts, *o)
		}
	}
	var first *events.HostOutcome
	status := events.Unknown
	for _, o := range results {
		if o == nil || o.Status.OK() || stoppedByRule(o) {
			continue
		}
		if first == nil {
			first, status = o, o.Status
		} else if o.Status != status {
			status = events.Failed
		}
	}
	if c.failed <= maxFailures && c.confirmed >= minConfirmed && c.confirmed+c.failed+c.stopped == n {
		out.Status = events.Confirmed
		out.Reason = fmt.Sprintf("confirmed on %d of %d hosts", c.confirmed, n)
		if first != nil {
			out.Reason += fmt.Sprintf("; %s did not, and the step allows %s", hostList(c.failing, c.failed), allowance(maxFailures, minConfirmed, n))
		}
		return out
	}
	if first == nil {
		// No host failed on its own: stopped from outside (a death
		// elsewhere, an interrupt), told by the caller.
		out.Status = events.Failed
		out.Reason = fmt.Sprintf("%d of %d hosts confirmed", c.confirmed, n)
		for _, o := range results {
			if o != nil && !o.Status.OK() {
				out.Reason += "; " + o.Host + ": " + o.Reason
				out.Evidence = o.Evidence
				break
			}
		}
		return out
	}
	if status == events.Skipped || status == events.Interrupted {
		status = events.Failed
	}
	out.Status = status
	out.Reason = fmt.Sprintf("%d of %d hosts did not confirm (%s), the step allows %s; %s: %s",
		c.failed, n, strings.Join(c.failing, ", "), allowance(maxFailures, minConfirmed, n), first.Host, first.Reason)
	if c.failed <= maxFailures {
		out.Reason = fmt.Sprintf("%d of %d hosts confirmed, the step needs %d (min_confirmed); %s: %s", c.confirmed, n, minConfirmed, first.Host, first.Reason)
	}
	out.ErrorMessage = first.ErrorMessage
	out.Evidence = first.Evidence
	return out
}

// cutOff is, on a fleet host's run, the error of a call that found the
// host cut off (its connection dropped, keepalives unanswered): that
// host fails at once, with the error as its evidence, rather than wait
// out its timeout; the fleet step's rule decides. A target of its own
// waits, as ever, for it to come back.
func (s *stepRun) cutOff(err error) {
	if s.r.host != nil && s.lost == nil && errors.Is(err, targets.ErrDisconnected) {
		s.lost = err
	}
}

// fleetCleanup sums up a launch's cleanup on a fleet's hosts: how many
// ended each way, the hosts named where it did not go as planned.
func fleetCleanup(cs []*events.Cleanup) *events.Cleanup {
	byResult := map[string][]string{}
	var order []string
	for _, c := range cs {
		if _, ok := byResult[c.Result]; !ok {
			order = append(order, c.Result)
		}
		byResult[c.Result] = append(byResult[c.Result], c.Host)
	}
	// The usual results first, then the hosts that went otherwise: the
	// same line whatever order the hosts' launches were made in.
	var usual, other []string
	for _, res := range order {
		hs := byResult[res]
		if usualCleanup(res) {
			usual = append(usual, fmt.Sprintf("%s on %d of %d hosts", res, len(hs), len(cs)))
		} else {
			other = append(other, fmt.Sprintf("%s: %s", strings.Join(hs, ", "), res))
		}
	}
	sort.Strings(usual)
	sort.Strings(other)
	return &events.Cleanup{Hosts: len(cs), Result: strings.Join(append(usual, other...), "; ")}
}

// usualCleanup is a cleanup result that goes without saying host by host.
func usualCleanup(res string) bool {
	return res == "stopped" || strings.HasPrefix(res, "kept running") || strings.HasPrefix(res, "stopped (daemon")
}
