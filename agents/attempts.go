package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/runner/records"
	"lockstep/views"
)

// attemptKey names an attempt: its records root, plan and number.
type attemptKey struct {
	root, plan string
	n          int
}

// live is an attempt this server started and may still be running.
type live struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once the run ended and its record is closed
	ended  runner.Attempted
}

// cancelled is the cause a cancelled attempt ends with: the interrupted
// step's and the record's reason, as a signal's is for `lockstep run`.
type cancelled struct{}

func (cancelled) Error() string { return "interrupted by the cancel tool (the MCP client asked)" }

// start runs one attempt in a goroutine of its own and returns once its
// record is open: its number is known, its first step may be running.
func (s *Server) start(p *plans.Plan, scope *plans.Scope, root, note string, progress func(events.Event), progressDone func()) (attemptKey, error) {
	ctx, cancel := context.WithCancelCause(s.base)
	l := &live{cancel: cancel, done: make(chan struct{})}
	opened := make(chan attemptKey, 1)
	failed := make(chan error, 1)
	var obs events.Observer = events.Observers{}
	if progress != nil {
		obs = observerFunc(progress)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(l.done)
		if progressDone != nil {
			defer progressDone()
		}
		at, err := runner.RunRecorded(ctx, runner.Recorded{
			Options: runner.Options{
				Plan:     p,
				Scope:    scope,
				Observer: obs,
				Start:    events.Start{Host: s.o.Host, User: s.o.User, Note: note, Args: []string{"mcp", "run"}, Lockstep: s.o.Version},
				Force:    s.o.Force,
			},
			Records: root,
			Opened: func(w *records.Writer) {
				k := attemptKey{root, p.Name, w.Number()}
				s.mu.Lock()
				s.live[k] = l
				s.mu.Unlock()
				opened <- k
			},
		})
		if err != nil {
			failed <- err
			cancel(nil)
			return
		}
		l.ended = at
		cancel(nil)
	}()
	select {
	case k := <-opened:
		return k, nil
	case err := <-failed:
		return attemptKey{}, fmt.Errorf("cannot keep the attempt's record: %w", err)
	}
}

type observerFunc func(events.Event)

func (f observerFunc) Emit(e events.Event) { f(e) }

// progressSender turns an attempt's events into progress notifications
// on the token the run call gave: one as each step starts and ends, and
// as a step reports a fraction. The runner never waits for the client: a
// notification that finds the queue full is dropped (status has every
// event), the verdict too: a client that stops reading never holds up
// the end of a run.
func (s *Server) progressSender(ss *mcp.ServerSession, token any) (emit func(events.Event), done func()) {
	if ss == nil || token == nil {
		return nil, nil
	}
	q := make(chan *mcp.ProgressNotificationParams, 64)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for n := range q {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = ss.NotifyProgress(ctx, n) // a client gone is no reason to stop the run
			cancel()
		}
	}()
	last, total := 0.0, 0.0
	emit = func(e events.Event) {
		n := progressOf(e)
		if n == nil {
			return
		}
		if e.Type == events.AttemptFinished {
			n.Progress, n.Total = total, total
		}
		if n.Progress < last { // progress only grows
			n.Progress = last
		}
		last, total = n.Progress, max(total, n.Total)
		n.ProgressToken = token
		select {
		case q <- n:
		default:
		}
	}
	return emit, func() { close(q) }
}

// progressOf is the notification an event makes, if any.
func progressOf(e events.Event) *mcp.ProgressNotificationParams {
	p, ok := views.ProgressOf(e)
	if !ok {
		return nil
	}
	return &mcp.ProgressNotificationParams{Progress: p.Done, Total: p.Total, Message: p.Message}
}

// Status is an attempt's state: the status and cancel tools' answer.
type Status struct {
	FormatVersion string `json:"format_version"`
	Plan          string `json:"plan"`
	Attempt       int    `json:"attempt"`
	// State is "running" or "ended".
	State string `json:"state" jsonschema:"running or ended"`
	// Events are the record's events from the one numbered Since on, in
	// the shape of lockstep run --json; Next is the since of the next call.
	Events []events.Event `json:"events"`
	Next   int            `json:"next" jsonschema:"pass as since to read only newer events"`
	More   bool           `json:"more,omitempty" jsonschema:"more events are recorded than this answer holds: call again with since = next"`
	// Outcome is the attempt's, once it ended; FailedStep is the failed
	// step's own outcome, with the evidence that decided it.
	Outcome    *events.Outcome `json:"outcome,omitempty"`
	FailedStep *events.Outcome `json:"failed_step_outcome,omitempty"`
	Records    string          `json:"records"`
}

// maxEvents bounds the events of one status answer.
const maxEvents = 200

// status reads an attempt's record; wait, when set, first waits that long
// for an attempt this server runs to end.
func (s *Server) status(ctx context.Context, k attemptKey, since int, wait time.Duration) (*Status, error) {
	s.mu.Lock()
	l := s.live[k]
	s.mu.Unlock()
	if l != nil && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-l.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	dir := records.AttemptDir(k.root, k.plan, k.n)
	running := false
	if l != nil {
		select {
		case <-l.done:
		default:
			running = true
		}
	}
	a, err := records.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("plan %s has no attempt %d: %w", k.plan, k.n, err)
	}
	st := &Status{FormatVersion: FormatVersion, Plan: k.plan, Attempt: k.n, State: "ended", Records: dir, Events: []events.Event{}}
	if running || a.Running {
		st.State = "running"
	}
	st.Events, st.Next, st.More, err = readEvents(filepath.Join(dir, records.EventsFile), since)
	if err != nil {
		return nil, err
	}
	if st.State == "ended" {
		o := a.Outcome
		if l != nil && l.ended.RecordErr != nil {
			o.NotKept = l.ended.RecordErr.Error()
		}
		st.Outcome = &o
		for _, step := range a.Steps {
			if step.Addr == o.Failed && step.Outcome != nil {
				st.FailedStep = step.Outcome
			}
		}
	}
	return st, nil
}

// readEvents reads the events of a record from the since-th on (0-based),
// at most maxEvents of them. A last line still being written is left for
// the next call.
func readEvents(path string, since int) ([]events.Event, int, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read the record: %w", err)
	}
	defer f.Close()
	out := []events.Event{}
	r := bufio.NewReaderSize(f, 64<<10)
	i := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // the end, or a line not yet whole
			return out, i, false, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if i >= since {
			if len(out) == maxEvents {
				return out, i, true, nil
			}
			var e events.Event
			if json.Unmarshal(line, &e) == nil {
				out = append(out, e)
			}
		}
		i++
	}
}

// cancelAttempt cancels an attempt this server runs, as Ctrl-C would, and
// waits until it has stopped what it launched and closed its record.
func (s *Server) cancelAttempt(ctx context.Context, k attemptKey) error {
	s.mu.Lock()
	l := s.live[k]
	s.mu.Unlock()
	if l == nil {
		return fmt.Errorf("attempt %d of %s is not running in this server: only attempts it started can be cancelled", k.n, k.plan)
	}
	l.cancel(cancelled{})
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("attempt %d of %s is still stopping: call status to see it end", k.n, k.plan)
	}
}
