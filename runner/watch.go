package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"lockstep/probes"
	"lockstep/targets"
)

// errProcessDied is matched by the cause of a step cancelled because a
// launched process died.
var errProcessDied = errors.New("a launched process died")

// diedError says which launched process died, how, and what its log said
// last.
type diedError struct {
	l     *launched
	state targets.ProcessState
	tail  []string
}

func (e *diedError) Error() string {
	p := e.l.current()
	if p.Daemon {
		return fmt.Sprintf("%s (daemon pid %d) %s", e.l.addr, p.PID, e.how())
	}
	return fmt.Sprintf("%s (pid %d) %s", e.l.addr, p.PID, e.how())
}

func (e *diedError) how() string {
	how := "exited"
	switch {
	case e.state.Replaced:
		how = "is gone (its pid now belongs to another process)"
	case e.state.Signal != "":
		how = "was killed by " + e.state.Signal
	case e.state.ExitCode >= 0:
		how = fmt.Sprintf("exited with status %d", e.state.ExitCode)
	}
	return how
}

func (e *diedError) Unwrap() error { return errProcessDied }

// watch checks every launched process while a step runs and cancels the
// step, with a *diedError as the cause, the moment one of them is no
// longer running. A lost connection to a target is not a death: the next
// check tries again.
//
// With nothing to watch yet, the watcher starts only after watchEvery
// (when its first look would have found nothing and waited as long): a
// step of a few milliseconds, a run step of a plan without launches,
// starts no goroutine and wakes none.
func (r *run) watch(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	wctx, stopWatch := context.WithCancel(ctx)
	done := make(chan struct{})
	loop := func() {
		defer close(done)
		next := time.NewTimer(0)
		defer next.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-next.C:
			}
			// The set can grow during the step (the launch it runs), so
			// the pace is chosen each time: a remote check is a round trip.
			every := watchEvery
			ls := r.watching()
			for _, l := range ls {
				if !isLocal(l.target) {
					every = watchEveryRemote
				}
			}
			// Each launch is looked at on its own: a fleet's hosts at
			// once, not one round trip after another.
			dead := make([]*diedError, len(ls))
			var wg sync.WaitGroup
			for i, l := range ls {
				wg.Go(func() {
					st, err := r.state(wctx, l)
					if err == nil && !st.Alive && st.following == "" {
						dead[i] = &diedError{l: l, state: st.ProcessState}
					}
				})
			}
			wg.Wait()
			for _, d := range dead {
				if d != nil {
					d.tail = r.tail(context.WithoutCancel(wctx), d.l)
					cancel(d)
					return
				}
			}
			next.Reset(every)
		}
	}
	if len(r.watching()) > 0 {
		go loop()
		return func() {
			stopWatch()
			<-done
		}
	}
	later := time.AfterFunc(watchEvery, loop)
	return func() {
		stopWatch()
		if !later.Stop() {
			<-done // started: wait for it to end
		}
	}
}

// tail reads the last lines of a launched process's own log.
func (r *run) tail(ctx context.Context, l *launched) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.guard.lines(probes.LaunchTail(ctx, l.target, l.current(), tailLines))
}
