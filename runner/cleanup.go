package runner

import (
	"context"
	"fmt"
	"time"

	"lockstep/runner/events"
)

// cleanup stops every launched process not kept, newest first, and
// reports each with the end of its log.
func (r *run) cleanup(ctx context.Context) {
	ls := r.launches()
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		c := &events.Cleanup{PID: l.proc.PID, Log: l.proc.Log}
		if l.shownLog != "" {
			c.Log = l.shownLog
		}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := l.target.Inspect(ictx, l.proc)
		cancel()
		switch {
		case err != nil:
			c.Result = "could not be checked: " + r.guard.text(err.Error())
		case !st.Alive:
			c.Result = "had already ended: it " + (&diedError{l: l, state: st}).how()
		case l.keep:
			c.Kept = true
			c.Result = fmt.Sprintf("kept running (pid %d, process group %d)", l.proc.PID, l.proc.PGID)
		default:
			sctx, cancel := context.WithTimeout(ctx, r.o.StopGrace+10*time.Second)
			err := l.target.Stop(sctx, l.proc, r.o.StopGrace)
			cancel()
			if err != nil {
				c.Result = "could not be stopped: " + r.guard.text(err.Error())
			} else {
				c.Result = "stopped"
			}
		}
		c.LogTail = r.tail(ctx, l)
		ev := events.Step{Addr: l.addr}
		r.emit(events.Event{Type: events.ProcessStopped, Step: &ev, Cleanup: c})
	}
}
