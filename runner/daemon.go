package runner

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/targets"
)

// launched is a process a launch step started, watched until the end.
//
// A command that exits 0 at once while a process it started keeps running
// (redis-server --daemonize yes, nginx, pg_ctl start) has daemonized: the
// launch then follows that daemon, watched as its own process was, until
// the end. Its mark still finds everything the launch started.
type launched struct {
	addr    string
	step    events.Step // the launch step, to tell of its daemon
	target  targets.Target
	proc    targets.Process // what Start started; Stop and Members go by it
	keep    bool
	pidfile string // where the daemon writes its pid; "" when the plan names none
	// shownLog is the log's path as shown, when a sensitive value is
	// part of it; "" shows proc.Log.
	shownLog string
	seq      int // its place among the launches and leftovers, for cleanup's order

	mu sync.Mutex // guards what follows: the watcher and the step both look
	// daemon is the process the launch daemonized into, once found.
	daemon *targets.Process
	// roots are the topmost processes the launch left when last looked at,
	// while the daemon is being settled; told is set once the daemon has
	// been announced.
	roots   []int
	rootsAt time.Time
	told    bool
	// pidfileOK is set once the pidfile has named the launch's process
	// or one of its members while its command ran.
	pidfileOK bool

	// marks are the files later probes read since this launch, as they
	// were before it started (probes.Mark keys).
	marks map[string]targets.FileInfo
	// adopted is set for a process an earlier attempt launched, which
	// this one adopted (adopt.go).
	adopted *adoption
}

// settleFor is how long the topmost processes a launch left must stay the
// same before the oldest is taken for its daemon: a double fork's middle
// process lives for microseconds.
const settleFor = 100 * time.Millisecond

// current is the process a launch's life is judged by: its daemon once it
// daemonized, else the process Start started.
func (l *launched) current() targets.Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.daemon != nil {
		return *l.daemon
	}
	return l.proc
}

// launchState is how a launch stands: its process's state (or its
// daemon's), and, while the command has exited 0 and the daemon it left
// is still being made sure of, why the launch is neither alive nor dead.
type launchState struct {
	targets.ProcessState
	following string
}

// state inspects a launch. When its command has exited 0 and left
// processes of its own running, the launch is followed to its daemon:
// the process the pidfile names when the plan gives one (and only once it
// is one of the launch's own), else the topmost process left, once the
// looks have agreed on it for settleFor (a double fork's middle process
// exits at once). A command that exits, 0 or not, leaving nothing, has ended.
func (r *run) state(ctx context.Context, l *launched) (launchState, error) {
	p := l.current()
	st, err := l.target.Inspect(ctx, p)
	if err == nil && st.Alive && !p.Daemon && l.pidfile != "" {
		return launchState{ProcessState: st, following: l.ownPidfile(ctx)}, nil
	}
	if err == nil && p.Daemon {
		l.regroup(st)
	}
	if err != nil || st.Alive || p.Daemon || st.Replaced || st.ExitCode != 0 {
		return launchState{ProcessState: st}, err
	}
	// The pidfile is read before the processes are listed: a daemon
	// writes it once it has left the launch's group (setsid), and a list
	// taken before would give it the group it was leaving.
	pid, following := 0, ""
	if l.pidfile != "" {
		pid, following = readPidfile(ctx, l)
	}
	ms, err := l.target.Members(ctx, l.proc)
	if err != nil {
		return launchState{}, err
	}
	// The command itself and the SSH wrapper leading its group are on
	// their way out; neither is a daemon.
	ms = slices.DeleteFunc(ms, func(m targets.ProcessInfo) bool { return m.PID == l.proc.PID || m.PID == l.proc.PGID })
	if len(ms) == 0 {
		return launchState{ProcessState: st}, nil
	}
	var d *targets.ProcessInfo
	switch {
	case l.pidfile == "":
		d, following = l.settle(ms)
	case pid > 0:
		d, following = fromPidfile(l, pid, ms)
	}
	if d == nil {
		return launchState{ProcessState: st, following: following}, nil
	}
	dp := targets.Process{PID: d.PID, PGID: d.PGID, Session: d.Session, StartTime: d.StartTime, Command: d.Command, Log: l.proc.Log, LogID: l.proc.LogID, Mark: l.proc.Mark, Daemon: true}
	l.mu.Lock()
	if l.daemon == nil {
		l.daemon = &dp
	}
	dp = *l.daemon
	l.mu.Unlock()
	st, err = l.target.Inspect(ctx, dp)
	dp = l.regroup(st)
	l.mu.Lock()
	tell := !l.told
	l.told = true
	l.mu.Unlock()
	if tell {
		ev := l.step
		r.emit(events.Event{Type: events.StepAction, Step: &ev, Action: &events.Action{Command: dp.Command, PID: dp.PID, PGID: dp.PGID, Daemonized: true, Process: l.held()}})
	}
	return launchState{ProcessState: st}, err
}

// regroup keeps the daemon's group and session as the look st found
// them, and returns the daemon. The listing it was found in may have been
// taken before it left the launch's group: a daemon that writes its
// pidfile before it calls setsid, or one slow to call it on a loaded
// machine. Its group then is the one it has now (the one its workers
// share, the one to stop), not the one it was leaving.
func (l *launched) regroup(st targets.ProcessState) targets.Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.Alive && st.PGID > 0 && l.daemon.PGID != st.PGID {
		l.daemon.PGID, l.daemon.Session = st.PGID, st.Session
	}
	return *l.daemon
}

// settle picks the daemon from the launch's processes ms: the topmost of
// them (its parent is not one), the oldest when several are, once the
// same topmost ones have been seen for settleFor.
func (l *launched) settle(ms []targets.ProcessInfo) (*targets.ProcessInfo, string) {
	in := map[int]bool{}
	for _, m := range ms {
		in[m.PID] = true
	}
	var roots []targets.ProcessInfo
	var pids []int
	for _, m := range ms {
		if !in[m.PPID] {
			roots = append(roots, m)
			pids = append(pids, m.PID)
		}
	}
	l.mu.Lock()
	if !slices.Equal(pids, l.roots) {
		l.roots, l.rootsAt = pids, time.Now()
	}
	settled := time.Since(l.rootsAt) >= settleFor
	l.mu.Unlock()
	if !settled || len(roots) == 0 {
		return nil, fmt.Sprintf("the command exited with status 0 and left %s running: looking for its daemon", processes(len(ms)))
	}
	d := slices.MinFunc(roots, func(a, b targets.ProcessInfo) int {
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.PID, b.PID))
	})
	return &d, ""
}

// pidfileMax is more than any pid file holds: a pid and a newline.
const pidfileMax = 64

// readPidfile reads the pid in the launch's pidfile; 0 and why while
// the file is missing or not yet written.
func readPidfile(ctx context.Context, l *launched) (int, string) {
	b, fi, err := l.target.ReadAt(ctx, l.pidfile, 0, pidfileMax)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("the command exited with status 0; reading its pidfile %s: %v", l.pidfile, err)
	case !fi.Exists:
		return 0, fmt.Sprintf("the command exited with status 0; waiting for its pidfile %s", l.pidfile)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0, fmt.Sprintf("the command exited with status 0; waiting for its pidfile %s to hold a pid", l.pidfile)
	}
	return pid, ""
}

// ownPidfile says why a launch with a pidfile whose command still runs
// is not yet started: "" once its pidfile has named the launch's own
// process or one of its members. A launch is confirmed by the process its
// pidfile names: without this, a command still on its way to
// daemonizing when the grace period ends (a slow machine) was taken for
// the server, and a stale pidfile went unseen.
func (l *launched) ownPidfile(ctx context.Context) string {
	l.mu.Lock()
	ok := l.pidfileOK
	l.mu.Unlock()
	if ok {
		return ""
	}
	pid, why := readPidfile(ctx, l)
	if pid == 0 {
		return strings.Replace(why, "the command exited with status 0; ", "the command is running; ", 1)
	}
	if pid != l.proc.PID {
		ms, err := l.target.Members(ctx, l.proc)
		if err != nil {
			return fmt.Sprintf("the command is running; looking for the process its pidfile %s names: %v", l.pidfile, err)
		}
		if !slices.ContainsFunc(ms, func(m targets.ProcessInfo) bool { return m.PID == pid }) {
			return fmt.Sprintf("the command is running; its pidfile %s names pid %d, not a process of this launch", l.pidfile, pid)
		}
	}
	l.mu.Lock()
	l.pidfileOK = true
	l.mu.Unlock()
	return ""
}

// fromPidfile returns the process pid (read from the launch's pidfile) if
// it is one of the launch's ms. One naming another process (a stale file
// from an earlier run) is waited for.
func fromPidfile(l *launched, pid int, ms []targets.ProcessInfo) (*targets.ProcessInfo, string) {
	for i := range ms {
		if ms[i].PID == pid {
			return &ms[i], ""
		}
	}
	return nil, fmt.Sprintf("the command exited with status 0; its pidfile %s names pid %d, not a process of this launch", l.pidfile, pid)
}

// daemonOutputs are the self outputs of a launch that daemonized: pid
// and pgid are the daemon's (so a port probe's pgid proves the listener
// is this launch's daemon or one of its workers), or nil before.
func daemonOutputs(l *launched) map[string]cty.Value {
	p := l.current()
	if !p.Daemon {
		return nil
	}
	return map[string]cty.Value{
		"pid":        cty.NumberIntVal(int64(p.PID)),
		"pgid":       cty.NumberIntVal(int64(p.PGID)),
		"daemonized": cty.True,
	}
}

// stepRoot is the step root as expressions see it, holding the outputs
// of the earlier steps addrs (those the analysed plan says the
// expressions read: never all of them, which would cost a plan of
// thousands of steps as much again at every step), with the daemon of a
// launch that daemonized after its step ended (pg_ctl start returning
// once the server is up, after the grace). A step that has not run is
// left out: reading it is an error, as it was not there.
func (r *run) stepRoot(addrs []string) cty.Value {
	if len(addrs) == 0 {
		return cty.EmptyObjectVal
	}
	outs := make(map[string]cty.Value, len(addrs))
	for _, addr := range addrs {
		v, ok := r.outputs[addr]
		if !ok {
			continue
		}
		if l := r.launch(addr); l != nil && v.Type().IsObjectType() {
			if d := daemonOutputs(l); d != nil {
				m := v.AsValueMap()
				maps.Copy(m, d)
				v = cty.ObjectVal(m)
			}
		}
		outs[addr] = v
	}
	return plans.StepOutputs(outs)
}

// processes says how many processes: "1 process", "3 processes".
func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", n)
}
