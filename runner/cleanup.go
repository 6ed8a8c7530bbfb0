package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"lockstep/runner/events"
	"lockstep/targets"
)

// cleanup stops every launched process not kept, and what the steps'
// commands left running (leftover.go), newest first, and reports each, a
// launch with the end of its log. A launch whose own process has ended
// is stopped all the same when it left processes running (a group
// leader dead while its workers listen, a child that moved to a session
// of its own): the launch owns all it started.
func (r *run) cleanup(ctx context.Context) {
	ls, los := r.launches(), r.leftovers()
	for i := len(ls) - 1; i >= 0; {
		// A launch on a fleet's hosts is stopped on all of them at once:
		// one host's grace does not wait on another's.
		group := []*launched{ls[i]}
		for i--; i >= 0 && ls[i].addr == group[0].addr && r.hostOf(ls[i].target) != "" && r.hostOf(group[0].target) != ""; i-- {
			group = append(group, ls[i])
		}
		los = r.stopLeftovers(ctx, los, group[len(group)-1].seq)
		cs := make([]*events.Cleanup, len(group))
		var wg sync.WaitGroup
		for j, l := range group {
			wg.Go(func() { cs[j] = r.stop(ctx, l) })
		}
		wg.Wait()
		for j, l := range group {
			ev := events.Step{Addr: l.addr}
			r.emit(events.Event{Type: events.ProcessStopped, Step: &ev, Cleanup: cs[j], Host: cs[j].Host})
		}
		if cs[0].Host != "" {
			ev := events.Step{Addr: group[0].addr}
			r.emit(events.Event{Type: events.ProcessStopped, Step: &ev, Cleanup: fleetCleanup(cs)})
		}
	}
	r.stopLeftovers(ctx, los, 0)
}

// stop stops one launch unless kept, and says how it went.
func (r *run) stop(ctx context.Context, l *launched) *events.Cleanup {
	p := l.current()
	c := &events.Cleanup{PID: p.PID, Log: l.proc.Log}
	if l.shownLog != "" {
		c.Log = l.shownLog
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	st, err := l.target.Inspect(ictx, p)
	var left []targets.ProcessInfo
	if err == nil {
		left, err = l.target.Members(ictx, l.proc)
	}
	cancel()
	ended := ""
	if err == nil && !st.Alive {
		ended = "had already ended: it " + (&diedError{l: l, state: st}).how()
	}
	switch {
	case err != nil:
		c.Result = "could not be checked: " + r.guard.text(err.Error())
	case l.keep && (st.Alive || len(left) > 0):
		c.Kept = true
		// An adopted process that died while what it started runs on (a
		// killed nginx master's workers) is not "left running": it is
		// gone, and what it left is.
		switch {
		case l.adopted != nil && st.Alive:
			c.Result = fmt.Sprintf("left running as it was found (adopted from attempt %d, pid %d)", l.adopted.from.Origin(), p.PID)
		case l.adopted != nil:
			c.Result = fmt.Sprintf("%s; left the %s it left running as they were found (adopted from attempt %d)", ended, processes(len(left)), l.adopted.from.Origin())
		case !st.Alive:
			c.Result = fmt.Sprintf("%s; kept the %s it left running", ended, processes(len(left)))
		case p.Daemon:
			c.Result = fmt.Sprintf("kept running (daemon pid %d, process group %d)", p.PID, p.PGID)
		default:
			c.Result = fmt.Sprintf("kept running (pid %d, process group %d)", p.PID, p.PGID)
		}
		c.Process, c.Adopted = l.held(), l.adopted != nil
	case !st.Alive && len(left) == 0:
		c.Result = ended
	default:
		sctx, cancel := context.WithTimeout(ctx, r.o.StopGrace+10*time.Second)
		err := l.target.Stop(sctx, l.proc, r.o.StopGrace)
		cancel()
		switch {
		case err != nil:
			c.Result = "could not be stopped: " + r.guard.text(err.Error())
		case !st.Alive:
			c.Result = fmt.Sprintf("%s; stopped the %s it left running", ended, processes(len(left)))
		case p.Daemon:
			c.Result = fmt.Sprintf("stopped (daemon pid %d)", p.PID)
		default:
			c.Result = "stopped"
		}
	}
	c.LogTail = r.tail(ctx, l)
	c.Host = r.hostOf(l.target)
	return c
}
