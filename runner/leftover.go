package runner

// What a command left running. The target marks a run step's command (and
// a command benchmark's) as it marks a launch (targets.Target.Run); once
// the command has exited, whatever still carries the mark, or shares a
// group or a session with what does, or descends from it, is this
// attempt's: the step says what it left, and the cleanup stops it at the
// end of the run as it stops a launch, unless kept. It is not watched:
// it was not launched as a server, and its death fails no step.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/targets"
)

// leftover is what one run of a step's command left running.
type leftover struct {
	addr   string
	target targets.Target
	owner  targets.Process // the command's mark: Members and Stop go by it
	keep   bool
	seq    int // its place among the launches, for cleanup's order
}

// lookWait bounds the look for what a command left.
const lookWait = 10 * time.Second

// leftBy looks, once the step's command has exited (or was cut short),
// for the processes it left running. Any there are the attempt's: the
// step says so (a warning now, Outcome.Left in the record) and the
// cleanup stops them at the end of the run unless kept. A look that
// fails leaves the mark to the cleanup all the same.
func (s *stepRun) leftBy(ctx context.Context, res targets.Result) {
	if res.Mark == "" {
		return
	}
	owner := res.Owned()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookWait)
	ms, err := targets.Leftovers(lctx, s.t, res)
	cancel()
	if err == nil && len(ms) == 0 {
		return
	}
	keep := s.st.Keep || s.r.o.Keep
	s.r.addLeftover(&leftover{addr: s.ev.Addr, target: s.t, owner: owner, keep: keep})
	then := "stopped at the end of the run"
	switch {
	case s.st.Keep:
		then = "kept running after the run (keep = true)"
	case keep:
		then = "kept running after the run (--keep)"
	}
	msg := fmt.Sprintf("the command left %s running: %s; %s", processes(len(ms)), procList(s.r.guard, ms), then)
	if err != nil {
		msg = fmt.Sprintf("could not look for processes the command left running (%v); whatever carries its mark is %s", err, then)
	}
	for _, m := range ms {
		s.left = append(s.left, events.LeftProcess{PID: m.PID, Command: cut(s.r.guard.text(m.Command), procShown)})
	}
	// A command line may hold a sensitive value (redis-server
	// --requirepass ...), and so may an error quoting the host.
	s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: s.r.guard.text(msg)})
}

// procShown is how much of a command line a list of processes shows.
const procShown = 60

// procsListed is how many processes a list names before it counts the rest.
const procsListed = 5

// procList names processes for people: "pid 123 (redis-server
// *:6379), pid 124 (sleep 99)". A command line is guarded before it is
// cut, so no part of a sensitive value is left to show.
func procList(g *guard, ms []targets.ProcessInfo) string {
	var parts []string
	for i, m := range ms {
		if i == procsListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(ms)-i))
			break
		}
		p := "pid " + strconv.Itoa(m.PID)
		if c := strings.TrimSpace(g.text(m.Command)); c != "" {
			p += " (" + cut(c, procShown) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// stopLeftovers stops, newest first, the leftovers of los that came after
// seq, and returns the others.
func (r *run) stopLeftovers(ctx context.Context, los []*leftover, seq int) []*leftover {
	for len(los) > 0 && los[len(los)-1].seq > seq {
		r.stopLeftover(ctx, los[len(los)-1])
		los = los[:len(los)-1]
	}
	return los
}

// stopLeftover ends, at the end of the run, what a command left running,
// or says it is kept.
func (r *run) stopLeftover(ctx context.Context, lo *leftover) {
	c := &events.Cleanup{}
	ictx, cancel := context.WithTimeout(ctx, lookWait)
	ms, err := lo.target.Members(ictx, lo.owner)
	cancel()
	if len(ms) > 0 {
		c.PID = ms[0].PID
	}
	switch {
	case err != nil:
		c.Result = "what its command left could not be checked: " + err.Error()
	case len(ms) == 0:
		c.Result = "what its command left running had ended"
	case lo.keep:
		c.Kept = true
		c.Result = fmt.Sprintf("kept the %s its command left running: %s", processes(len(ms)), procList(r.guard, ms))
	default:
		sctx, cancel := context.WithTimeout(ctx, r.o.StopGrace+lookWait)
		err := lo.target.Stop(sctx, lo.owner, r.o.StopGrace)
		cancel()
		if err != nil {
			c.Result = fmt.Sprintf("the %s its command left running (%s) could not be stopped: %v", processes(len(ms)), procList(r.guard, ms), err)
		} else {
			c.Result = fmt.Sprintf("stopped the %s its command left running: %s", processes(len(ms)), procList(r.guard, ms))
		}
	}
	c.Result = r.guard.text(c.Result)
	ev := events.Step{Addr: lo.addr}
	r.emit(events.Event{Type: events.ProcessStopped, Step: &ev, Cleanup: c})
}

// probeLeft warns, once per step and probe, that a probe's command left
// processes running: the probe has stopped them already, and does after
// every observation (a probe must not start processes).
func (s *stepRun) probeLeft(np namedProbe) {
	lv, ok := np.p.(probes.Leaving)
	if !ok {
		return
	}
	ms, err := lv.Left()
	if (len(ms) == 0 && err == nil) || s.probeWarned[np.name] {
		return
	}
	if s.probeWarned == nil {
		s.probeWarned = map[string]bool{}
	}
	s.probeWarned[np.name] = true
	msg := fmt.Sprintf("probe.%s: its command left %s running: %s; stopped at once, as after every observation of this step (a probe must not start processes: a server belongs in a launch step)", np.name, processes(len(ms)), procList(s.r.guard, ms))
	switch {
	case err != nil && len(ms) == 0:
		msg = fmt.Sprintf("probe.%s: could not look for processes its command left running: %v", np.name, err)
	case err != nil:
		msg = fmt.Sprintf("probe.%s: its command left %s running: %s; stopping them failed: %v", np.name, processes(len(ms)), procList(s.r.guard, ms), err)
	}
	s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: s.r.guard.text(msg)})
}
