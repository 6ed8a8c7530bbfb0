package runner

// Adoption and re-confirmation: a run of part of a plan (--from, --only)
// takes no action for the steps before it, and confirms them on what is
// there now. A launch re-confirms by adopting the process an earlier
// attempt of the plan launched and left running: found again (the record
// that kept it, its pidfile, or the listener of a port the plan names),
// checked to be that very process (its pid and start time, its mark),
// its command the plan's, and its config proof (the launch's
// postconditions) re-checked on its own log from its start. Then it is
// watched as if launched here. A run or a benchmark re-confirms on the
// outputs its newest confirmed attempt recorded, its attributes the same.
// Nothing here ever starts a process: --from never launches silently.

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/runner/records"
	"lockstep/steps"
	"lockstep/targets"
)

// history is what the records of the plan's earlier attempts say of
// their launches, read once, when a step first needs it.
type history struct {
	once     sync.Once
	launches []records.Launch
	err      error
}

// earlier lists the launches of the plan's earlier attempts, newest
// first; none when the run keeps no records.
func (r *run) earlier() ([]records.Launch, error) {
	r.hist.once.Do(func() {
		if r.o.History == "" {
			return
		}
		ls, err := records.Launches(r.o.History, r.o.Plan.Name)
		r.hist.err = err
		for _, l := range ls {
			if l.Attempt != r.o.Attempt {
				r.hist.launches = append(r.hist.launches, l)
			}
		}
	})
	return r.hist.launches, r.hist.err
}

// adoption is how a launch of this attempt came to hold a process it did
// not start.
type adoption struct {
	from  records.Launch
	found string // "the record of attempt 3", "pidfile /run/x.pid", "the listener of 127.0.0.1:8080"
	since time.Time
}

func (a *adoption) event(pid int) *events.Adoption {
	return &events.Adoption{Attempt: a.from.Origin(), PID: pid, Found: a.found, Since: a.since}
}

// mode is what this run does with the step (plans.Part).
func (s *stepRun) mode() plans.StepMode { return s.r.o.Part.Mode(s.ev.Addr) }

// reconfirm stands in for the action of a step the run re-confirms:
// handled is false for a step that acts as usual (it runs, or its kind
// has no action: a wait, an assert).
func (s *stepRun) reconfirm(ctx, outer context.Context) (out events.Outcome, done, handled bool) {
	if s.mode() != plans.Reconfirm {
		return events.Outcome{}, false, false
	}
	switch s.cfg.(type) {
	case *steps.LaunchConfig:
		out, done = s.adoptEarlier(ctx, outer)
		return out, done, true
	case *steps.RunConfig, *steps.BenchmarkConfig:
		out, done = s.fromRecord()
		return out, done, true
	}
	return events.Outcome{}, false, false
}

// failedAdoption is a re-confirmed launch that found nothing to adopt.
func (s *stepRun) failedAdoption(reason string) (events.Outcome, bool) {
	return events.Outcome{Status: events.Failed, Reason: reason, Evidence: s.evidence(nil)}, true
}

// adoptEarlier adopts the process an earlier attempt launched for this
// step, or fails saying what it found.
func (s *stepRun) adoptEarlier(ctx, outer context.Context) (events.Outcome, bool) {
	shown, err := (&stepEnv{s}).Shown("command")
	if err != nil {
		return s.errored(err), true
	}
	a, seen, err := s.findAdoptable(ctx, shown)
	if ctx.Err() != nil {
		return s.ended(ctx, outer), true
	}
	if err != nil {
		return s.errored(err), true
	}
	if a == nil {
		why := "nothing to adopt"
		if len(seen) > 0 {
			why += ": " + strings.Join(seen, "; ")
		}
		return s.failedAdoption(fmt.Sprintf("re-confirming %s: %s. A run --from a later step never launches: lockstep run --from %s starts it afresh", s.ev.Addr, why, s.ev.Addr))
	}
	return s.adopted(a, shown)
}

// findAdoptable looks for the process an earlier attempt launched for
// this step and left running, in the records (newest first), then by
// the launch's pidfile, then by the listeners of the ports the plan
// names on its target. seen says what was found that would not do.
func (s *stepRun) findAdoptable(ctx context.Context, shown string) (*adoption, []string, error) {
	all, err := s.r.earlier()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the earlier attempts: %w", err)
	}
	// The step's launches, newest first, each process once (pid and start
	// time), however many attempts adopted it.
	var mine []records.Launch
	same := map[[2]uint64]bool{}
	for _, l := range all {
		id := [2]uint64{uint64(l.Held.PID), l.Held.StartTime}
		if l.Step == s.ev.Addr && l.Held.Target == s.t.Name() && !same[id] {
			same[id] = true
			mine = append(mine, l)
		}
	}
	if len(mine) == 0 {
		return nil, []string{fmt.Sprintf("no earlier attempt of %s launched %s on target %s", s.r.o.Plan.Name, s.ev.Addr, s.t.Name())}, nil
	}
	var seen []string
	note := func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !slices.Contains(seen, msg) {
			seen = append(seen, msg)
		}
	}
	other := func(l records.Launch) bool {
		if l.Command != shown {
			note("attempt %d's pid %d runs another command (%s), not %s", l.Attempt, l.Held.PID, l.Command, shown)
			return true
		}
		return false
	}
	var ended []records.Launch // the launches whose own process is gone
	for _, l := range mine {
		if l.Stopped {
			if len(seen) == 0 {
				note("attempt %d stopped its pid %d at its end", l.Attempt, l.Held.PID)
			}
			continue
		}
		st, err := s.t.Inspect(ctx, process(l.Held.HeldProcess))
		if err != nil {
			return nil, nil, fmt.Errorf("looking at attempt %d's pid %d: %w", l.Attempt, l.Held.PID, err)
		}
		if !st.Alive {
			note("attempt %d's pid %d %s", l.Attempt, l.Held.PID, (&diedError{state: st}).how())
			ended = append(ended, l)
			continue
		}
		if other(l) {
			continue
		}
		return &adoption{from: l, found: fmt.Sprintf("the record of attempt %d", l.Attempt), since: l.Since}, seen, nil
	}
	// The record's process is gone, or the record never said who the
	// daemon is: a process carrying the mark of one of the step's
	// launches, started after it, is of that launch.
	// known says the process carries the mark of one of the step's
	// launches, whether or not its command is the plan's.
	known := func(an targets.Answerer) bool {
		return slices.ContainsFunc(mine, func(l records.Launch) bool { return marked(an, l) })
	}
	byMark := func(an targets.Answerer, found string) *adoption {
		for _, l := range mine {
			if !marked(an, l) || other(l) {
				continue
			}
			l.Held = daemonHeld(l.Held.Target, an, l.Held.First())
			return &adoption{from: l, found: found, since: l.Since}
		}
		return nil
	}
	if pidfile := s.cfg.(*steps.LaunchConfig).Pidfile; pidfile != "" {
		b, _, err := s.t.ReadAt(ctx, pidfile, 0, 64)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		switch {
		case err != nil:
			note("pidfile %s: %v", pidfile, err)
		case perr != nil || pid <= 0:
			note("pidfile %s holds no pid", pidfile)
		default:
			an, ok, err := targets.ProcessOf(ctx, unwrap(s.t), pid)
			switch {
			case err != nil:
				return nil, nil, err
			case !ok:
				note("pidfile %s names pid %d, which is not running", pidfile, pid)
			default:
				if a := byMark(an, "pidfile "+pidfile); a != nil {
					return a, seen, nil
				}
				if !known(an) {
					note("pidfile %s names pid %d (%s), which no attempt of this plan launched as %s", pidfile, pid, an.Command, s.ev.Addr)
				}
			}
		}
	}
	for _, addr := range s.r.namedAddrs(s.st.Target) {
		ans, err := targets.ListenerOf(ctx, unwrap(s.t), addr)
		if err != nil {
			return nil, nil, err
		}
		for _, an := range ans {
			if i := slices.IndexFunc(ended, func(l records.Launch) bool { return marked(an, l) && leftBehind(an, l) }); i >= 0 {
				note("%s is held by pid %d (%s), what attempt %d's %s left running when its process (pid %d) ended: not a server to adopt", addr, an.PID, an.Command, ended[i].Attempt, s.ev.Addr, ended[i].Held.PID)
				continue
			}
			if a := byMark(an, "the listener of "+addr.String()); a != nil {
				return a, seen, nil
			}
		}
		if len(ans) > 0 && !known(ans[0]) {
			note("%s is held by pid %d (%s), which no attempt of this plan launched as %s", addr, ans[0].PID, ans[0].Command, s.ev.Addr)
		}
	}
	return nil, seen, nil
}

// marked says whether an carries the mark of launch l and started after
// it: a process of that launch.
func marked(an targets.Answerer, l records.Launch) bool {
	first := l.Held.First()
	return an.Mark != "" && an.Mark == first.Mark && an.StartTime >= first.StartTime
}

// leftBehind says whether an, a process holding a port the plan names
// with the mark of launch l, whose own process has ended, is what l left
// running when it ended: an nginx worker whose master was killed, the
// worker of a server that crashed. It still answers, but the launch is
// dead (as a launch whose leader dies while a worker lives is), so it is
// never adopted as the launch. A daemon that detached into a session of
// its own (as daemon(3) and setsid do) is not left behind when the
// record never named one: the command that forked it ended as it should.
// Once the record named the daemon, that daemon's end is the launch's.
func leftBehind(an targets.Answerer, l records.Launch) bool {
	return l.Held.Daemon || an.PID != an.Session
}

// adopted makes the adopted process this step's launch: watched from
// now on, its log followed from its start, left running at the end
// unless --stop.
func (s *stepRun) adopted(a *adoption, shown string) (events.Outcome, bool) {
	held := a.from.Held
	first := held.First()
	cfg := s.cfg.(*steps.LaunchConfig)
	l := &launched{addr: s.ev.Addr, step: s.ev, target: s.t, proc: process(first), keep: !s.r.o.Stop, pidfile: cfg.Pidfile, adopted: a}
	if held.Daemon {
		d := process(held.HeldProcess)
		l.daemon, l.told = &d, true
	}
	s.own = l
	s.adoption = a
	s.r.addLaunch(l)
	// The config proof is read on all the process wrote since it started,
	// not only on what it writes from now on.
	s.ownLog = probes.FollowLaunch(s.t, l.proc, 0)
	s.followers = append(s.followers, s.ownLog)
	cur := l.current()
	s.self["pid"] = cty.NumberIntVal(int64(cur.PID))
	s.self["pgid"] = cty.NumberIntVal(int64(cur.PGID))
	s.self["log_path"] = cty.StringVal(first.Log)
	s.self["command"] = cty.StringVal(shown)
	s.self["alive"] = cty.True
	s.self["daemonized"] = cty.BoolVal(held.Daemon)
	s.self["adopted_from"] = cty.NumberIntVal(int64(a.from.Attempt))
	s.r.emit(events.Event{Type: events.StepAction, Step: &s.ev, Action: &events.Action{
		Command: shown, PID: cur.PID, PGID: cur.PGID, Log: first.Log, Process: l.held(), Adopted: a.event(cur.PID)}})
	return events.Outcome{}, false
}

// held is the launch's process as the record keeps it for a later
// attempt.
func (l *launched) held() *events.Held {
	cur := l.current()
	h := &events.Held{Target: l.target.Name(), HeldProcess: l.heldOf(cur)}
	if cur.Daemon {
		first := l.heldOf(l.proc)
		h.Launched = &first
	}
	return h
}

func (l *launched) heldOf(p targets.Process) events.HeldProcess {
	log := p.Log
	if l.shownLog != "" {
		log = l.shownLog
	}
	return events.HeldProcess{PID: p.PID, PGID: p.PGID, Session: p.Session, StartTime: p.StartTime, Log: log, LogID: p.LogID, Mark: p.Mark, Daemon: p.Daemon}
}

// daemonHeld is a launch's process found again by its mark (an, a
// pidfile's or a port's): followed as its daemon, the process the launch
// started (first) kept to find its members and its log by.
func daemonHeld(target string, an targets.Answerer, first events.HeldProcess) events.Held {
	return events.Held{Target: target, Launched: &first, HeldProcess: events.HeldProcess{
		PID: an.PID, PGID: an.PGID, Session: an.Session, StartTime: an.StartTime, Log: first.Log, LogID: first.LogID, Mark: first.Mark, Daemon: true}}
}

// process is the targets.Process a record's HeldProcess names.
func process(h events.HeldProcess) targets.Process {
	return targets.Process{PID: h.PID, PGID: h.PGID, Session: h.Session, StartTime: h.StartTime, Log: h.Log, LogID: h.LogID, Mark: h.Mark, Daemon: h.Daemon}
}

// adoptedConditions words a re-confirmed launch's own conditions: it
// started nothing, it adopted a process; its grace period ran from when
// that process was launched.
func (s *stepRun) adoptedConditions(conds []events.Condition) []events.Condition {
	if s.adoption == nil || len(conds) == 0 {
		return conds
	}
	conds[0].Source = fmt.Sprintf("the process attempt %d launched (found by %s) is still that process: pid %d, same start time, same command", s.adoption.from.Origin(), s.adoption.found, s.own.current().PID)
	return conds
}

// elapsed is how long the step's process has run, for a launch's grace
// period: an adopted one's since it was launched.
func (s *stepRun) elapsed() time.Duration {
	if s.adoption != nil && !s.adoption.since.IsZero() {
		return time.Since(s.adoption.since)
	}
	return time.Since(s.start)
}

// once says the step's conditions are judged once: its kind's say so, or
// it re-confirms (an adopted launch's proof is in its log already).
func (s *stepRun) once() bool {
	return s.cfg.Once() || s.mode() == plans.Reconfirm
}

// keptHolds is, in a run that launches, the look before the launch for
// a server an earlier attempt kept that still holds a port the plan
// names on the launch's target: the run says so before starting a
// second one, or, with adopt = true, adopts it (adopted).
func (s *stepRun) keptHolds(ctx context.Context, shown string) (adopted bool, err error) {
	addrs := s.r.namedAddrs(s.st.Target)
	if len(addrs) == 0 || s.r.o.History == "" {
		return false, nil
	}
	cfg := s.cfg.(*steps.LaunchConfig)
	for _, addr := range addrs {
		ans, err := targets.ListenerOf(ctx, unwrap(s.t), addr)
		if err != nil || len(ans) == 0 {
			continue
		}
		all, err := s.r.earlier()
		if err != nil {
			continue
		}
		for _, an := range ans {
			for _, l := range all {
				first := l.Held.First()
				if !marked(an, l) || l.Held.Target != s.t.Name() {
					continue
				}
				if an.PID != l.Held.PID || an.StartTime != l.Held.StartTime {
					// Not the record's process: that one still runs (a
					// master beside its workers) and is the launch, or it
					// ended and an is a daemon it forked, or what it left.
					st, err := s.t.Inspect(ctx, process(l.Held.HeldProcess))
					if err != nil {
						return false, err
					}
					if !st.Alive && leftBehind(an, l) {
						s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: fmt.Sprintf(
							"pid %d (%s), left running by attempt %d's %s when its process (pid %d) ended, still holds %s: this launch starts a second server beside it; stop pid %d first", an.PID, an.Command, l.Origin(), l.Step, l.Held.PID, addr, an.PID)})
						return false, nil
					}
					if !st.Alive {
						l.Held = daemonHeld(l.Held.Target, an, first)
					}
				}
				if cfg.Adopt && l.Step == s.ev.Addr && l.Command == shown {
					s.adopted(&adoption{from: l, found: "the listener of " + addr.String(), since: l.Since}, shown)
					return true, nil
				}
				why := "adopt = true on " + s.ev.Addr + " adopts it instead"
				switch {
				case l.Step != s.ev.Addr:
					why = "it is " + l.Step + "'s"
				case l.Command != shown:
					why = "it runs another command (" + l.Command + ")"
				}
				how := "left running"
				if l.Kept {
					how = "kept running"
				}
				s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: fmt.Sprintf(
					"pid %d (%s), %s by attempt %d, still holds %s: this launch starts a second server beside it; %s", an.PID, an.Command, how, l.Origin(), addr, why)})
				return false, nil
			}
		}
	}
	return false, nil
}

// fromRecord re-confirms a run or a benchmark without acting: its self
// (exit code, metrics) is what the newest attempt that confirmed it
// recorded, with the same attributes; its conditions are then judged on
// those and on its probes, now. Its metrics are not this attempt's: the
// record keeps them only as where the re-confirmation came from.
func (s *stepRun) fromRecord() (events.Outcome, bool) {
	fail := func(format string, args ...any) (events.Outcome, bool) {
		return events.Outcome{Status: events.Failed, Reason: fmt.Sprintf(format, args...), Evidence: s.evidence(nil)}, true
	}
	if s.r.o.History == "" {
		return fail("re-confirming %s: there are no records of earlier attempts to re-confirm it from", s.ev.Addr)
	}
	o, n, err := records.ConfirmedStep(s.r.o.History, s.r.o.Plan.Name, s.ev.Addr)
	if err != nil {
		return s.errored(fmt.Errorf("reading the earlier attempts: %w", err)), true
	}
	if o == nil {
		return fail("re-confirming %s: no earlier attempt of %s confirmed it, and a run --from a later step does not run it: lockstep run --from %s runs it", s.ev.Addr, s.r.o.Plan.Name, s.ev.Addr)
	}
	if diff := configDiff(o.Config, s.shownCfg); diff != "" {
		return fail("re-confirming %s: attempt %d confirmed it with other attributes (%s): lockstep run --from %s runs it as it is now", s.ev.Addr, n, diff, s.ev.Addr)
	}
	for k, text := range o.Outputs {
		expr, diags := hclsyntax.ParseExpression([]byte(text), k, hcl.InitialPos)
		if diags.HasErrors() {
			continue
		}
		if v, diags := expr.Value(nil); !diags.HasErrors() {
			s.self[k] = v
		}
	}
	if len(o.Metrics) > 0 || len(o.Stats) > 0 {
		s.self["metrics"] = metricsValue(o.Metrics, o.Stats)
	}
	if s.notes == nil {
		s.notes = map[string]string{}
	}
	s.notes["reconfirmed_from"] = fmt.Sprintf("attempt %d", n)
	s.r.emit(events.Event{Type: events.StepAction, Step: &s.ev, Action: &events.Action{Command: fmt.Sprintf("(not run again: re-confirmed on what attempt %d recorded)", n)}})
	return events.Outcome{}, false
}

// configDiff says which of a step's attributes differ between two
// records of its config, "" when none does.
func configDiff(was, now map[string]string) string {
	var out []string
	keys := slices.Sorted(maps.Keys(now))
	for k := range was {
		if _, ok := now[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range slices.Compact(keys) {
		if k == "progress" || was[k] == now[k] {
			continue
		}
		out = append(out, fmt.Sprintf("%s %q, now %q", k, was[k], now[k]))
	}
	return strings.Join(out, "; ")
}

// namedAddrs are the loopback addresses the plan's http probes, loads
// and port probes name on target, as far as they evaluate before the
// run (a URL built from an earlier step's output does not).
func (r *run) namedAddrs(target string) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(as ...netip.AddrPort) {
		for _, a := range as {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	ectx := r.o.Scope.EvalContext(nil)
	text := func(e hcl.Expression) string {
		if e == nil {
			return ""
		}
		t, _, err := evalText(e, ectx)
		if err != nil {
			return ""
		}
		return t
	}
	for _, st := range r.o.Plan.Steps {
		if st.Target != target {
			continue
		}
		for _, pb := range st.Probes {
			switch pb.Kind {
			case "http":
				add(loopbackAddrs(text(pb.Attrs["url"]))...)
			case "port":
				if p, err := strconv.Atoi(text(pb.Attrs["port"])); err == nil && p > 0 && p < 65536 {
					add(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(p)))
				}
			}
		}
		if st.Load != nil {
			add(loopbackAddrs(text(st.Load.Attrs["url"]))...)
		}
	}
	return out
}

// unwrap is the target under the run's defaults (its env and workdir).
func unwrap(t targets.Target) targets.Target {
	if d, ok := t.(*defaulted); ok {
		return d.Target
	}
	return t
}

// partStart says in the attempt's start which part of the plan it runs.
func (r *run) partStart(s *events.Start) {
	p := r.o.Part
	s.From, s.Only = p.From, p.Only
	s.Reconfirm = p.Reconfirmed(r.o.Plan)
}
