package targets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Local is the machine lockstep runs on (Linux: it reads /proc).
//
// It remembers the processes it started, reaps them as they exit and keeps
// their exit status, so Inspect can say how a launch ended. A process
// known only by its Process value (started by an earlier lockstep, say) is
// judged from /proc alone: gone or a zombie means exited, with the status
// unknown.
//
// Errors never quote a command line: it may carry a sensitive value.
type Local struct {
	self int // our own pid, left out of Processes

	mu       sync.Mutex
	launched map[int]*localLaunch // by pid

	// scanMu guards ages, the processes the last scans saw (scan), and
	// what a scan reads /proc with.
	scanMu    sync.Mutex
	ages      map[int]procAge
	agesSpare map[int]procAge // the map before last, filled afresh by the next scan
	agesAt    time.Time       // when a scan last read every process
	scanBufs  procBufs
	// seekWorks says /proc lists from a pid on (seekable), once
	// seekChecked.
	seekChecked, seekWorks bool
	statBuf                []byte // /proc/stat, read by totalForks
}

var _ Target = (*Local)(nil)

// localLaunch is a process this Local started and reaps.
type localLaunch struct {
	startTime uint64
	done      chan struct{} // closed once reaped; state is then set
	state     ProcessState
}

// NewLocal returns the target for the local machine.
func NewLocal() *Local {
	return &Local{self: os.Getpid(), launched: make(map[int]*localLaunch)}
}

// localProcRoot is where the kernel's process table is mounted.
const localProcRoot = "/proc"

// localMaxOutput bounds what Run keeps of each of stdout and stderr, so a
// command that prints without end cannot exhaust lockstep's memory; the
// rest is read and dropped.
const localMaxOutput = 64 << 20

// localRunWaitDelay is how long Run waits, after the command itself
// exited, for a process that escaped its group to close the output pipes
// it inherited.
const localRunWaitDelay = 2 * time.Second

// Name is "local".
func (l *Local) Name() string { return "local" }

// Run runs c.Line with /bin/sh -c in a session (so a process group) of
// its own, stdin from /dev/null, marked as Start marks a launch
// (startMarked), so it and everything it starts carry Result.Mark from
// its first instruction, and Members finds what it left
// running once it has exited. When ctx ends, the shell's group is killed
// (SIGKILL), then every process carrying the mark (SIGTERM, SIGKILL): a
// child that moved to a session of its own (setsid) or was orphaned by a
// double fork dies too, and Run returns once none is left, with what was
// captured and an error wrapping ctx.Err().
//
// The session is its own, as an SSH session's is: so its processes are
// never taken for lockstep's, and none of them has lockstep's terminal
// (a command asking for a password on /dev/tty gets no terminal, as over
// SSH).
func (l *Local) Run(ctx context.Context, c Command) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run: %w", err)
	}
	mark, err := newMark()
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run: %w", err)
	}
	r, err := l.startRun(ctx, c, mark)
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run: %w", err)
	}
	defer r.close()
	r.wait(ctx)
	res := Result{Stdout: r.stdout.b, Stderr: r.stderr.b, Duration: time.Since(r.start), ExitCode: -1, Mark: mark, Started: r.started, from: r.from}
	if r.reaped && r.err == nil {
		res.ExitCode, res.Signal = waitExit(r.status)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("run: %w", ctx.Err())
	}
	if r.err != nil {
		return res, fmt.Errorf("run: %w", r.err)
	}
	return res, nil
}

// localRun is a command Run started, read and reaped by the goroutine
// that runs it, with no goroutine or poller registration of its own: a
// poll(2) of the two output pipes, the shell's pidfd and an eventfd that
// the context's end writes to (from context.AfterFunc's goroutine, made
// only then). A run step of true costs a
// fork and an exec; os/exec's two copying goroutines, its context
// watcher and the poller's dozen fcntl and epoll_ctl calls cost a third
// as much again.
type localRun struct {
	l                  *Local
	mark               string
	pid                int
	pidfd, wake        int // -1 when closed
	out, errOut        int // read ends of the pipes, -1 once at their end
	stdout, stderr     cappedBuffer
	start              time.Time
	started            uint64   // Result.Started
	from               procFrom // Result.from
	reaped             bool
	status             syscall.WaitStatus // once reaped
	err                error              // a failure to poll or to reap
	stopWake           func() bool
	woken              chan struct{} // closed once the context's end wrote to wake
	cancelled, exitedT time.Time     // when the context's end was seen, when the shell was reaped
}

// startRun forks and execs the shell of c, marked with mark, in a session
// of its own, stdin from /dev/null and stdout and stderr to pipes.
func (l *Local) startRun(ctx context.Context, c Command, mark string) (_ *localRun, err error) {
	r := &localRun{l: l, mark: mark, pidfd: -1, wake: -1, out: -1, errOut: -1,
		stdout: cappedBuffer{limit: localMaxOutput}, stderr: cappedBuffer{limit: localMaxOutput}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer unix.Close(null)
	var outp, errp [2]int
	if err := unix.Pipe2(outp[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	r.out = outp[0]
	defer unix.Close(outp[1])
	if err := unix.Pipe2(errp[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	r.errOut = errp[0]
	defer unix.Close(errp[1])
	if ctx.Done() != nil {
		if r.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			return nil, fmt.Errorf("eventfd: %w", err)
		}
		wake, woken := r.wake, make(chan struct{})
		r.woken = woken
		r.stopWake = context.AfterFunc(ctx, func() {
			defer close(woken)
			_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		})
	}
	attr := &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   localEnviron(markedEnv(c, mark)),
		Files: []uintptr{uintptr(null), uintptr(outp[1]), uintptr(errp[1])},
		Sys:   &syscall.SysProcAttr{Setsid: true, PidFD: &r.pidfd},
	}
	// Taken before the fork, so at or before the shell's own start time,
	// which reading its stat would cost a tenth of a millisecond of a
	// command of a few (the shell is exec'ing then).
	r.started = bootTicksBefore()
	forks, forksOK := l.totalForks()
	r.start = time.Now()
	// A kernel without pidfds (before 5.3) fails the fork: Stop signals
	// through pidfds too.
	err = startMarked(mark, func() error {
		pid, err := syscall.ForkExec("/bin/sh", []string{"/bin/sh", "-c", c.Line}, attr)
		r.pid = pid
		return err
	}, func() {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		r.reap(true)
	})
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: "/bin/sh", Err: err}
	}
	if forksOK {
		r.from = procFrom{pid: r.pid, forks: forks}
	}
	return r, nil
}

// wait reads the command's output and reaps its shell: until the shell
// has exited and both pipes are at their end, or localRunWaitDelay after
// the shell exited or ctx ended, whichever came first (a process that
// escaped the group may hold the pipes open). When ctx ends first, the
// shell's group is killed, then every process carrying the mark.
func (r *localRun) wait(ctx context.Context) {
	fds := make([]unix.PollFd, 0, 4)
	for r.out >= 0 || r.errOut >= 0 || !r.reaped {
		timeout := -1
		if first := r.waitFrom(); !first.IsZero() {
			left := time.Until(first.Add(localRunWaitDelay))
			if left <= 0 {
				break
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		fds = fds[:0]
		for _, fd := range []int{r.out, r.errOut, r.pidfd, r.wake} {
			if fd >= 0 {
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		if _, err := unix.Poll(fds, timeout); err != nil && err != unix.EINTR {
			r.err = fmt.Errorf("poll: %w", err)
			break
		}
		for _, p := range fds {
			if p.Revents == 0 {
				continue
			}
			switch int(p.Fd) {
			case r.out:
				r.read(&r.out, &r.stdout)
			case r.errOut:
				r.read(&r.errOut, &r.stderr)
			case r.pidfd:
				r.reap(false)
			case r.wake:
				r.cancel(ctx)
			}
		}
		if r.out < 0 && r.errOut < 0 && !r.reaped {
			// The pipes' end is most often the shell's exit: taken now,
			// its status spares a poll and a wake-up for the pidfd.
			r.reap(false)
		}
	}
	if !r.reaped {
		// The delay passed with the shell still there (cut short and not
		// yet dead) or poll failed: it is killed, and waited for.
		_ = unix.PidfdSendSignal(r.pidfd, unix.SIGKILL, nil, 0)
		r.reap(true)
	}
}

// waitFrom is when the delay for the pipes started: the shell's exit or
// the context's end, whichever came first; zero while neither has.
func (r *localRun) waitFrom() time.Time {
	switch {
	case r.exitedT.IsZero():
		return r.cancelled
	case r.cancelled.IsZero() || r.exitedT.Before(r.cancelled):
		return r.exitedT
	}
	return r.cancelled
}

// read reads what a pipe holds into buf, closing it (and setting *fd to
// -1) at its end.
func (r *localRun) read(fd *int, buf *cappedBuffer) {
	b := buf.room()
	n, err := unix.Read(*fd, b)
	if err == unix.EINTR || err == unix.EAGAIN {
		return
	}
	if n > 0 {
		buf.took(b, n)
		return
	}
	unix.Close(*fd)
	*fd = -1
}

// reap collects the shell, once its pidfd says it has exited (block
// false: the zombie is there to take) or waiting for it (block). By pid:
// until it is reaped the zombie keeps its pid from reuse, and only Run
// waits for it.
func (r *localRun) reap(block bool) {
	flags := syscall.WNOHANG
	if block {
		flags = 0
	}
	var ws syscall.WaitStatus
	pid, err := syscall.Wait4(r.pid, &ws, flags, nil)
	for err == syscall.EINTR {
		pid, err = syscall.Wait4(r.pid, &ws, flags, nil)
	}
	switch {
	case err != nil:
		r.err = fmt.Errorf("wait: %w", err)
	case pid == 0:
		return // not exited after all
	default:
		r.status = ws
	}
	r.reaped, r.exitedT = true, time.Now()
	unix.Close(r.pidfd)
	r.pidfd = -1
}

// cancel is what the context's end does: the shell leads its group
// (Setsid), so -pid is the group, killed unless the shell is reaped (its
// pid, so the group's id, may then be another's); then by the mark, for
// what left the group.
func (r *localRun) cancel(ctx context.Context) {
	<-r.woken // its write done, the descriptor can go
	unix.Close(r.wake)
	r.wake = -1
	r.cancelled = time.Now()
	if !r.reaped {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), localRunStopWait)
	defer cancel()
	_ = r.l.Stop(sctx, Process{Mark: r.mark}, 0)
}

// close closes what is still open; the context's writer is stopped first
// (or waited for), so it never writes to a descriptor closed and reused.
func (r *localRun) close() {
	if r.stopWake != nil && !r.stopWake() {
		<-r.woken
	}
	for _, fd := range []*int{&r.out, &r.errOut, &r.pidfd, &r.wake} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// bootTicksBefore is, in /proc's clock ticks since boot (USER_HZ, 100 a
// second), a time at or before the start time of any process forked
// after the call, 0 if the clock cannot be read. The kernel stamps a
// new process with CLOCK_BOOTTIME at its fork and /proc shows that
// rounded down to a tick (both shifted alike in a time namespace); a
// tick is taken off for a clock read a hair ahead of the kernel's.
func bootTicksBefore() uint64 {
	const userHZ = 100
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	if t := uint64(ts.Nano()) / (1e9 / userHZ); t > 1 {
		return t - 1
	}
	return 0
}

// localRunStopWait bounds how long a cancelled Run waits for the
// processes it kills to be gone.
const localRunStopWait = 10 * time.Second

// Start launches c.Line with /bin/sh -c in a new session (so a new process
// group too), stdin from /dev/null, stdout and stderr to log, a file it
// creates (O_EXCL; see Target.Start) (its directory created if needed; a relative path is taken from lockstep's
// working directory, not c.Dir, and Process.Log is absolute). Nothing ties
// the process to lockstep: no pipe, no controlling terminal, no
// parent-death signal, so it outlives lockstep when nobody stops it.
//
// The shell carries the mark from its first instruction (startMarked),
// under the pid Start returns.
//
// Process.Command is /proc's command line as Start returns: the shell's
// or, when the shell has already exec'd a simple command, that command's. Start returns once the process exists, whether
// or not the command will be found: a missing command shows as an exit
// (127) in Inspect.
func (l *Local) Start(ctx context.Context, c Command, log string) (Process, error) {
	if err := ctx.Err(); err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	if log == "" {
		return Process{}, errors.New("start: no log file given")
	}
	mark, err := newMark()
	if err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	// Absolute, so the Process names the same file whatever the working
	// directory of whoever reads it later.
	log, err = filepath.Abs(log)
	if err != nil {
		return Process{}, fmt.Errorf("start: log: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return Process{}, fmt.Errorf("start: log directory: %w", err)
	}
	out, err := createLog(log)
	if err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	defer out.Close()
	outInfo, err := out.Stat()
	if err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	in, err := os.Open(os.DevNull)
	if err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	defer in.Close()
	// Not CommandContext: ctx bounds the start, not the process's life.
	cmd := exec.Command("/bin/sh", "-c", c.Line)
	cmd.Env = localEnviron(markedEnv(c, mark))
	cmd.Dir = c.Dir
	// Files, not writers: the child gets the descriptors themselves and
	// no goroutine of ours copies its output.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startMarked(mark, cmd.Start, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }); err != nil {
		return Process{}, fmt.Errorf("start: %w", err)
	}
	pid := cmd.Process.Pid
	// Until Wait below, the child cannot be reaped, so its /proc entry is
	// there even if it has already exited. Start has returned once the
	// shell was exec'd: its command line is the command's.
	st, cmdline, err := readLocalProc(pid)
	if err != nil {
		// It may have started children already; they carry the mark.
		_ = l.Stop(context.WithoutCancel(ctx), Process{PID: pid, PGID: pid, Mark: mark}, 0)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return Process{}, fmt.Errorf("start: read the new process: %w", err)
	}
	ln := &localLaunch{startTime: st.StartTime, done: make(chan struct{})}
	l.mu.Lock()
	l.launched[pid] = ln
	l.mu.Unlock()
	go func() {
		_ = cmd.Wait() // the status is in ProcessState
		ln.state.Exited = true
		ln.state.ExitCode, ln.state.Signal = localExitStatus(cmd.ProcessState)
		close(ln.done)
	}()
	return Process{
		PID:       pid,
		PGID:      st.PGID,
		Session:   st.Session,
		StartTime: st.StartTime,
		Command:   procCommand(cmdline, st.Comm),
		Log:       log,
		Mark:      mark,
		LogID:     logID(outInfo),
	}, nil
}

// logID is the identity a launch's log is read by: a regular file's. A
// device (/dev/null) has none: it is read by its name.
func logID(fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return ""
	}
	return localFileInfo(fi).ID
}

// createLog creates a launch's log for appending. A regular file already
// there is an error wrapping fs.ErrExist (O_EXCL decides, so two launches
// racing for one path never share a file); a device or a fifo (/dev/null)
// is opened as it is.
func createLog(path string) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE | os.O_EXCL
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		flags &^= os.O_CREATE | os.O_EXCL
	}
	return os.OpenFile(path, flags, 0o644)
}

// markedEnv is the environment of a marked command: the mark and c.Env.
func markedEnv(c Command, mark string) map[string]string {
	env := map[string]string{markEnv(mark): "1"}
	maps.Copy(env, c.Env)
	return env
}

// forkMu is held while lockstep carries a command's mark itself
// (startMarked), and shared by whatever else of this package starts a
// process on this machine, which would inherit the mark if it forked
// then: unmarked starts run at once beside each other (a fleet's ssh -G
// of 50 hosts), never beside a marked one.
var forkMu sync.RWMutex

// startMarked starts cmd marked from its first instruction with mark's
// RLIMIT_RTTIME soft limit: lockstep takes the limit itself for the
// moment of the fork (a child inherits its parent's limits, as every
// process the command starts then inherits its), and puts its own back
// once the child exists. Nothing runs before the command is marked, and
// no shell stands between lockstep and the command's: one exec, not two.
// The limit limits nothing (see markLimitBase), in lockstep as in the
// command. A hard limit below the mark (set by whoever started lockstep)
// leaves the command marked by its environment, group and session alone.
//
// start forks; undo ends what it started, should lockstep fail to take
// its own limit back.
func startMarked(mark string, start func() error, undo func()) error {
	lim, _ := markLimit(mark)
	forkMu.Lock()
	defer forkMu.Unlock()
	var own unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_RTTIME, nil, &own); err != nil {
		return fmt.Errorf("read lockstep's limits: %w", err)
	}
	if own.Max < lim {
		return start()
	}
	if err := unix.Prlimit(0, unix.RLIMIT_RTTIME, &unix.Rlimit{Cur: lim, Max: own.Max}, nil); err != nil {
		return fmt.Errorf("mark the new process: %w", err)
	}
	err := start()
	if rerr := unix.Prlimit(0, unix.RLIMIT_RTTIME, &own, nil); rerr != nil {
		// Lowering a soft limit within its hard limit is always allowed;
		// if it were not, the command would not run beside a mark it
		// cannot be told from.
		if err == nil {
			undo()
		}
		return errors.Join(err, fmt.Errorf("take back lockstep's own limit: %w", rerr))
	}
	return err
}

// startUnmarked starts cmd, not marked: never while lockstep carries a
// mark for a command of its own.
func startUnmarked(cmd *exec.Cmd) error {
	forkMu.RLock()
	defer forkMu.RUnlock()
	return cmd.Start()
}

// localReapWait bounds how long Inspect waits for our reaper to collect a
// process /proc already shows as a zombie, to report its real status.
const localReapWait = time.Second

// Inspect reads p's state. A process this Local started and has reaped
// reports its exit code or signal. Otherwise /proc decides: no entry, or a
// zombie, is exited (ExitCode -1, unknown); a different start time is
// Replaced (and exited). A zero p.StartTime skips the Replaced check. The
// command line is not compared: it legitimately changes when the shell
// execs the command.
func (l *Local) Inspect(ctx context.Context, p Process) (ProcessState, error) {
	if p.PID <= 0 {
		return ProcessState{}, fmt.Errorf("inspect pid %d: not a process id", p.PID)
	}
	ln := l.launchOf(p)
	if ln != nil {
		select {
		case <-ln.done:
			return ln.state, nil
		default:
		}
	}
	st, err := readLocalStat(p.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ln != nil {
			// Reaped between the two looks.
			return l.waitReaped(ctx, ln)
		}
		return ProcessState{Exited: true, ExitCode: -1}, nil
	case err != nil:
		return ProcessState{}, fmt.Errorf("inspect pid %d: %w", p.PID, err)
	case p.StartTime != 0 && st.StartTime != p.StartTime:
		return ProcessState{Exited: true, ExitCode: -1, Replaced: true}, nil
	case st.Zombie():
		if ln != nil {
			return l.waitReaped(ctx, ln)
		}
		return ProcessState{Exited: true, ExitCode: -1}, nil
	}
	return ProcessState{Alive: true, ExitCode: -1, PGID: st.PGID, Session: st.Session}, nil
}

// waitReaped waits (briefly) for our reaper to collect ln, to report its
// status; it is dead already, so even without the status it has exited.
func (l *Local) waitReaped(ctx context.Context, ln *localLaunch) (ProcessState, error) {
	t := time.NewTimer(localReapWait)
	defer t.Stop()
	select {
	case <-ln.done:
		return ln.state, nil
	case <-t.C:
	case <-ctx.Done():
	}
	return ProcessState{Exited: true, ExitCode: -1}, nil
}

// launchOf returns our record of p if we started that very process.
func (l *Local) launchOf(p Process) *localLaunch {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.launched[p.PID]
	if ln == nil || (p.StartTime != 0 && ln.startTime != p.StartTime) {
		return nil
	}
	return ln
}

// localStopPoll is how often Stop looks for what is left of the launch.
const localStopPoll = 20 * time.Millisecond

// Members lists the live processes of the launch p (see Target.Members),
// reading /proc: each process's stat, limits and, unless its limits
// already showed the mark, its environment (readable for our own user's
// processes, or every process when root).
func (l *Local) Members(ctx context.Context, p Process) ([]ProcessInfo, error) {
	scan, err := l.scan(ctx, p.Mark, p.StartTime, p.from)
	if err != nil {
		return nil, fmt.Errorf("members of pid %d: %w", p.PID, err)
	}
	ms := members(p, scan, l.self)
	// Command lines are read for the members only: a look at every
	// process is the cost of Stop's every turn.
	for i := range ms {
		b, err := os.ReadFile(filepath.Join(localProcRoot, strconv.Itoa(ms[i].PID), "cmdline"))
		if err == nil && len(b) > 0 {
			ms[i].Command = parseCmdline(b)
		}
	}
	return ms, nil
}

// scan reads, for every process that started at or after since, its
// stat and whether it carries mark. A process that started before since
// (the launch's first process) is left out: it cannot carry the mark,
// and it can be in none of the launch's groups or sessions (the launch's
// first process leads a session of its own, and a process joins neither
// another session nor a group outside its own), nor descend from one of
// its processes (a parent is older than its child, and an orphan goes to
// an ancestor). Which processes are older is known without reading them
// again (ages): a process keeps the identity getdents gives its /proc
// directory for its life, so a look for what a run step's command left
// reads the files of the processes started since, not the machine's
// every one.
//
// With from (what a local run's command left), only the pids from its
// first process's to the last one made are listed, when the machine's
// pids provably have not come round meanwhile (pidRange): the kernel's
// listing of every process was the look's largest cost.
func (l *Local) scan(ctx context.Context, mark string, since uint64, from procFrom) ([]procSeen, error) {
	lim, limited := markLimit(mark)
	l.scanMu.Lock()
	defer l.scanMu.Unlock()
	d, err := openProcDir(&l.scanBufs)
	if err != nil {
		return nil, err
	}
	defer d.close()
	lo, hi, ranged := l.pidRange(d, from)
	var ents []procEntry
	if ranged {
		ents, err = d.listRange(lo, hi)
	} else {
		ents, err = d.list()
	}
	if err != nil {
		return nil, err
	}
	if ranged {
		return l.scanRead(ctx, d, ents, mark, lim, limited, since, nil)
	}
	now := time.Now()
	known := l.ages
	if now.Sub(l.agesAt) > procAgesFor {
		known, l.agesAt = nil, now
	}
	// Two maps taken in turn: a look after every run step would otherwise
	// make one of the machine's every process each time.
	ages := l.agesSpare
	if ages == nil {
		ages = make(map[int]procAge, len(ents))
	}
	clear(ages)
	out, err := l.scanRead(ctx, d, ents, mark, lim, limited, since, &procAges{known: known, ages: ages})
	if err != nil {
		return nil, err
	}
	l.ages, l.agesSpare = ages, l.ages
	return out, nil
}

// procAges are the ages a full scan keeps (scan): those known from
// earlier scans, and those it makes for the next.
type procAges struct{ known, ages map[int]procAge }

// scanRead reads the processes ents of /proc that started at or after
// since (their stat, and whether they carry mark), using and making ages
// where pa is not nil.
func (l *Local) scanRead(ctx context.Context, d *procDir, ents []procEntry, mark string, lim uint64, limited bool, since uint64, pa *procAges) ([]procSeen, error) {
	var out []procSeen
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if pa != nil {
			if a, ok := pa.known[e.pid]; ok && a.ino == e.ino && a.start < since {
				pa.ages[e.pid] = a
				continue
			}
		}
		b, err := d.read(e.pid, "stat")
		if err != nil {
			continue // gone meanwhile
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		if pa != nil && e.ino > 1 { // 1: the kernel could not make the directory's inode
			pa.ages[e.pid] = procAge{ino: e.ino, start: st.StartTime}
		}
		if st.StartTime < since {
			continue
		}
		s := procSeen{stat: st, command: procCommand(nil, st.Comm)}
		if limited {
			if b, err := d.read(e.pid, "limits"); err == nil {
				s.marked = limitsMarked(b, lim)
			}
		}
		if !s.marked && mark != "" {
			if b, err := d.read(e.pid, "environ"); err == nil {
				s.marked = environMarked(b, mark)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// procFrom is where a local run's command started on the machine's
// pids: its shell's pid, and the machine's count of forks (/proc/stat
// "processes") read before the shell's own. Zero: not known.
type procFrom struct {
	pid   int
	forks uint64
}

// pidRange is the pids a look for what the command from started must
// read, lo to hi (the last pid made), when that is provably all of
// them: the kernel gives pids in turn, each the next free one after the
// last, going round to 300 past pid_max. So while the pids have not come
// round since the shell's, everything made since has a pid from the
// shell's to the last one, and coming round again to above the shell's
// takes more forks than there are free pids: over half of pid_max less
// 300, with under half of it taken by threads, cannot have happened in
// fewer forks than that. Where a pid is placed by hand (clone3's set_tid,
// ns_last_pid: a checkpoint's restore, needing CAP_SYS_ADMIN or
// CAP_CHECKPOINT_RESTORE), the look is the earlier one's, by start
// times, of every process. ok is false when any of it is not known, or
// /proc cannot be listed from a pid on (seekable).
func (l *Local) pidRange(d *procDir, from procFrom) (lo, hi int, ok bool) {
	if from.pid <= 0 || !l.seekable(d) {
		return 0, 0, false
	}
	forks, ok := l.totalForksLocked()
	if !ok || forks < from.forks {
		return 0, 0, false
	}
	threads, last, ok := readLoadavg(d)
	if !ok || last < from.pid {
		return 0, 0, false // come round since the shell's
	}
	pidMax, ok := readPidMax(d)
	if !ok {
		return 0, 0, false
	}
	half := uint64(max(pidMax-300, 0)) / 2
	if forks-from.forks >= half || uint64(threads) >= half {
		return 0, 0, false
	}
	return from.pid, last, true
}

// procTGIDOffset is where the kernel puts the first pid's entry in a
// listing of /proc (fs/proc/base.c TGID_OFFSET): seeking to it plus a
// pid lists the pids from that one on.
const procTGIDOffset = 258

// seekable reports whether /proc lists from a pid on when asked, as
// procTGIDOffset says: checked once, on lockstep's own pid, the first
// listed from there.
func (l *Local) seekable(d *procDir) bool {
	if l.seekChecked {
		return l.seekWorks
	}
	l.seekChecked = true
	ents, err := d.listRange(l.self, l.self)
	l.seekWorks = err == nil && len(ents) > 0 && ents[0].pid == l.self
	if _, err := unix.Seek(d.fd, 0, io.SeekStart); err != nil {
		l.seekWorks = false
	}
	return l.seekWorks
}

// procAge is a process as a scan last saw it: the inode number of its
// /proc directory and its start time. The kernel gives a /proc/PID
// directory a fresh inode number when it makes it (and drops it when
// the process exits), so the same pid under the same number is the same
// process.
type procAge struct{ ino, start uint64 }

// procAgesFor is how long a scan trusts the ages of earlier ones before
// it reads every process again: the inode numbers come from a 32-bit
// counter the kernel shares among pipes, sockets and /proc, which cannot
// come round to the same number for the same pid in that time.
const procAgesFor = 10 * time.Second

// procDir reads the small files of /proc/PID through one descriptor of
// /proc and one buffer: an openat, a read and a close for a stat, where
// os.ReadFile also makes the poller's fcntl and epoll_ctl, an fstat and a
// second read, and allocates the file and its contents.
type procDir struct {
	fd int
	*procBufs
}

// procBufs are a procDir's buffers, kept from one scan to the next by
// whoever serialises them (Local.scanMu): getdents' 32 KiB, a file's
// 4 KiB and the list of entries.
type procBufs struct {
	dents, buf []byte
	ents       []procEntry
}

// openProcDir opens /proc to read with bufs (which it allocates the first
// time); the procDir uses them until it is closed.
func openProcDir(bufs *procBufs) (*procDir, error) {
	fd, err := unix.Open(localProcRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", localProcRoot, err)
	}
	if bufs.buf == nil {
		bufs.dents, bufs.buf = make([]byte, 32<<10), make([]byte, 4096)
	}
	return &procDir{fd: fd, procBufs: bufs}, nil
}

func (d *procDir) close() { unix.Close(d.fd) }

// procEntry is a process's directory in /proc: its pid and the inode
// number getdents gives it.
type procEntry struct {
	pid int
	ino uint64
}

// list lists the processes of /proc by pid, with their directories'
// inode numbers (which os.File.ReadDir does not give), valid until the
// next list with the same buffers.
func (d *procDir) list() ([]procEntry, error) {
	out := d.ents[:0]
	defer func() { d.ents = out[:0] }()
	buf := d.dents
	for {
		n, err := d.entries(buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		if out, _, err = appendDirents(out, buf[:n], 0); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b procEntry) int { return a.pid - b.pid })
	return out, nil
}

// listRange lists the processes of /proc from pid lo to hi, valid as
// list's are: seeking to lo's place, reading a few entries at a time and
// stopping past hi, so that the kernel makes the entries of those alone.
func (d *procDir) listRange(lo, hi int) ([]procEntry, error) {
	out := d.ents[:0]
	defer func() { d.ents = out[:0] }()
	if _, err := unix.Seek(d.fd, procTGIDOffset+int64(lo), io.SeekStart); err != nil {
		return nil, fmt.Errorf("list %s from pid %d: %w", localProcRoot, lo, err)
	}
	buf := d.dents[:1024]
	for {
		n, err := d.entries(buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		past := false
		out, past, err = appendDirents(out, buf[:n], hi)
		if err != nil || past {
			return out, err
		}
	}
}

// entries reads the next entries of /proc into buf (0: no more), again
// when a signal cut the call short.
func (d *procDir) entries(buf []byte) (int, error) {
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", localProcRoot, err)
		}
		return n, nil
	}
}

// appendDirents appends the pids of the getdents entries b to out, up to
// pid hi (0: all); past says one beyond hi was seen.
func appendDirents(out []procEntry, b []byte, hi int) (_ []procEntry, past bool, _ error) {
	// struct linux_dirent64: ino (8 bytes), off (8), reclen (2), type
	// (1), then the name, NUL-terminated.
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return out, false, fmt.Errorf("list %s: a directory entry of %d bytes", localProcRoot, reclen)
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		// Only a pid's name is parsed: Atoi's error for "self", "net"
		// and the other fifty is an allocation each.
		if len(name) > 0 && name[0] >= '1' && name[0] <= '9' {
			if pid, err := strconv.Atoi(string(name)); err == nil {
				if hi > 0 && pid > hi {
					return out, true, nil
				}
				out = append(out, procEntry{pid: pid, ino: binary.NativeEndian.Uint64(b[0:8])})
			}
		}
		b = b[reclen:]
	}
	return out, false, nil
}

// totalForks is the machine's count of forks since boot, /proc/stat's
// "processes" (every namespace's, threads' too).
func (l *Local) totalForks() (uint64, bool) {
	l.scanMu.Lock()
	defer l.scanMu.Unlock()
	return l.totalForksLocked()
}

// totalForksLocked is totalForks with scanMu held.
func (l *Local) totalForksLocked() (uint64, bool) {
	fd, err := unix.Open(filepath.Join(localProcRoot, "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	if l.statBuf == nil {
		l.statBuf = make([]byte, 8<<10)
	}
	b, err := readProcFD(fd, &l.statBuf, false)
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nprocesses "))
	if !ok {
		return 0, false
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.ParseUint(string(rest), 10, 64)
	return n, err == nil
}

// readLoadavg reads /proc/loadavg's count of threads and the last pid
// made ("0.52 0.58 0.59 3/169 14815").
func readLoadavg(d *procDir) (threads, last int, ok bool) {
	b, err := d.readFile("loadavg")
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, 0, false
	}
	_, total, found := bytes.Cut(f[3], []byte("/"))
	if !found {
		return 0, 0, false
	}
	threads, err1 := strconv.Atoi(string(total))
	last, err2 := strconv.Atoi(string(f[4]))
	return threads, last, err1 == nil && err2 == nil
}

// readPidMax reads /proc/sys/kernel/pid_max.
func readPidMax(d *procDir) (int, bool) {
	b, err := d.readFile("sys/kernel/pid_max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	return n, err == nil
}

// readFile returns /proc/name, valid until the next read.
func (d *procDir) readFile(name string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readProcFD(fd, &d.buf, true)
}

// read returns /proc/PID/name, valid until the next read. A process gone
// (before the open or during the read) gives unix.ENOENT or unix.ESRCH,
// as the system call's own error: a scan drops the process then, and
// formatting an error for each process gone meanwhile cost more than
// its read.
func (d *procDir) read(pid int, name string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, strconv.Itoa(pid)+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(d.fd, strconv.Itoa(pid)+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readProcFD(fd, &d.buf, name == "stat")
}

// readProcFD reads the /proc file open at fd to its end into *buf (grown
// as needed). A stat (line) is one line the kernel writes whole: a read
// that did not fill the buffer and ends the line has it all, without the
// second read that would return 0.
func readProcFD(fd int, buf *[]byte, line bool) ([]byte, error) {
	n := 0
	for {
		if n == len(*buf) {
			*buf = append(*buf, make([]byte, len(*buf))...)
		}
		b := *buf
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += m
		if m == 0 || (line && n < len(b) && n > 0 && b[n-1] == '\n') {
			return b[:n], nil
		}
	}
}

// procErr is the error of reading /proc/PID/name: fs.ErrNotExist for a
// process that is gone (ENOENT before the open, ESRCH after it).
func procErr(pid int, name string, err error) error {
	if err == unix.ENOENT || err == unix.ESRCH {
		return fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
	}
	return fmt.Errorf("read %s/%d/%s: %w", localProcRoot, pid, name, err)
}

// Stop ends every member of the launch p: SIGTERM and SIGCONT (a stopped
// process holds TERM pending until continued), then SIGKILL once grace
// has passed, and returns when no member is left (zombies are dead
// already and do not count) or ctx ends. A member found after the first
// signals (a child forked meanwhile) gets them too. Each signal goes
// through a pidfd opened on a process whose start time is checked first,
// so a pid reused meanwhile is never hit.
func (l *Local) Stop(ctx context.Context, p Process, grace time.Duration) error {
	pgid := p.PGID
	if pgid <= 1 && p.Mark == "" {
		// A Process from Start always has its group, a Run's its mark;
		// this one is not ours.
		return fmt.Errorf("stop pid %d: no process group (pgid %d)", p.PID, pgid)
	}
	if own, err := syscall.Getpgid(0); err == nil && pgid > 1 && own == pgid {
		return fmt.Errorf("stop pid %d: process group %d is lockstep's own", p.PID, pgid)
	}
	type proc struct {
		pid   int
		start uint64
	}
	signalled := map[proc]bool{}
	term := func() (bool, error) {
		ms, err := l.Members(ctx, p)
		for _, m := range ms {
			if k := (proc{m.PID, m.StartTime}); !signalled[k] {
				signalled[k] = true
				signalLocal(m, syscall.SIGTERM)
				signalLocal(m, syscall.SIGCONT)
			}
		}
		return len(ms) == 0, err
	}
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	err := pollUntil(graceCtx, localStopPoll, term)
	cancel()
	if err == nil || ctx.Err() != nil {
		return wrapLocalStop(p, err)
	}
	kill := func() (bool, error) {
		ms, err := l.Members(ctx, p)
		for _, m := range ms {
			signalLocal(m, syscall.SIGKILL)
		}
		return len(ms) == 0, err
	}
	return wrapLocalStop(p, pollUntil(ctx, localStopPoll, kill))
}

func wrapLocalStop(p Process, err error) error {
	if err == nil {
		return nil
	}
	if p.PGID <= 1 {
		return fmt.Errorf("stop the processes marked %s: %w", p.Mark, err)
	}
	return fmt.Errorf("stop pid %d (group %d): %w", p.PID, p.PGID, err)
}

// signalLocal sends sig to m if m is still the process the scan saw: a
// pidfd pins the process, then its start time is compared. Without pidfd
// (Linux before 5.3) the check and the kill are a few microseconds apart.
func signalLocal(m ProcessInfo, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(m.PID, 0)
	if err != nil {
		if st, err := readLocalStat(m.PID); err == nil && st.StartTime == m.StartTime {
			_ = syscall.Kill(m.PID, sig)
		}
		return
	}
	defer unix.Close(fd)
	if st, err := readLocalStat(m.PID); err != nil || st.StartTime != m.StartTime {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// pollUntil calls cond every interval until it reports done, fails, or ctx
// ends (then ctx's error).
func pollUntil(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := cond()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// localGroupMembers counts the live (non-zombie) processes of group pgid.
func localGroupMembers(pgid int) (int, error) {
	n := 0
	err := eachLocalProcess(func(pid int) error {
		st, err := readLocalStat(pid)
		if err != nil {
			return nil // gone meanwhile
		}
		if st.PGID == pgid && !st.Zombie() {
			n++
		}
		return nil
	})
	return n, err
}

// MoveAside renames path to path.prev-<UTC time>, adding .1, .2... when
// that name is taken; the rename never replaces an existing file.
func (l *Local) MoveAside(ctx context.Context, path string) (string, error) {
	if fi, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("move aside %s: %w", path, err)
	} else if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return "", nil
	}
	base := path + ".prev-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("move aside %s: %w", path, err)
		}
		name := base
		if i > 0 {
			name = base + "." + strconv.Itoa(i)
		}
		err := renameNoReplace(path, name)
		switch {
		case err == nil:
			return name, nil
		case errors.Is(err, fs.ErrExist):
			continue
		case errors.Is(err, fs.ErrNotExist):
			// Moved or removed by someone else since the Lstat.
			return "", nil
		default:
			return "", fmt.Errorf("move aside %s: %w", path, err)
		}
	}
}

// renameNoReplace renames old to new unless new exists (then an error
// wrapping fs.ErrExist). Filesystems without RENAME_NOREPLACE get a check
// then a rename, which only a concurrent writer of the same name can beat.
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if _, err := os.Lstat(new); err == nil {
			return &os.LinkError{Op: "rename", Old: old, New: new, Err: fs.ErrExist}
		}
		return os.Rename(old, new)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
	return nil
}

// Stat describes path, following symbolic links.
func (l *Local) Stat(ctx context.Context, path string) (FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return FileInfo{}, nil
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return localFileInfo(fi), nil
}

// SHA256 hashes the file at path, streaming it.
func (l *Local) SHA256(ctx context.Context, path string) (string, FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", FileInfo{}, nil
	}
	if err != nil {
		return "", FileInfo{}, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", FileInfo{}, fmt.Errorf("hash %s: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", FileInfo{}, fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), localFileInfo(st), nil
}

// ReadAt reads up to max bytes of path from off. The FileInfo comes from
// the open descriptor, so it describes the very file read even if path is
// renamed or replaced meanwhile; bytes are read only up to the size seen
// then. An offset at or past the end reads nothing.
func (l *Local) ReadAt(ctx context.Context, path string, off int64, max int) ([]byte, FileInfo, error) {
	if off < 0 {
		return nil, FileInfo{}, fmt.Errorf("read %s: negative offset %d", path, off)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, FileInfo{}, nil
	}
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("read %s: %w", path, err)
	}
	return readOpen(f, localFileInfo(st), off, max)
}

// readOpen reads up to max bytes of the open file f, described by info,
// from off, up to the size info saw.
func readOpen(f *os.File, info FileInfo, off int64, max int) ([]byte, FileInfo, error) {
	n := min(int64(max), info.Size-off)
	if n <= 0 {
		return nil, info, nil
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, info, fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
	}
	return buf[:got], info, nil
}

// ReadFile reads the file ref names by identity: at ref.At, at ref.Path,
// through /proc/PID/fd of ref.PIDs, or among the entries of ref.Path's
// directory, in that order, opening each and checking the identity on the
// open descriptor.
func (l *Local) ReadFile(ctx context.Context, ref FileRef, off int64, max int) ([]byte, FileInfo, error) {
	if off < 0 {
		return nil, FileInfo{}, fmt.Errorf("read %s: negative offset %d", ref.Path, off)
	}
	if ref.ID == "" {
		return nil, FileInfo{}, fmt.Errorf("read %s: no file identity to read by", ref.Path)
	}
	try := func(name string) (*os.File, FileInfo, bool) {
		// Only a regular file that is the one: opening a fifo or a pipe
		// (a process's descriptor) could block.
		if st, err := os.Stat(name); err != nil || !st.Mode().IsRegular() || localFileInfo(st).ID != ref.ID {
			return nil, FileInfo{}, false
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, FileInfo{}, false
		}
		st, err := f.Stat()
		if err != nil || localFileInfo(st).ID != ref.ID {
			f.Close()
			return nil, FileInfo{}, false
		}
		info := localFileInfo(st)
		info.Path = name
		return f, info, true
	}
	// Stages, cheapest first: the next is listed only when the ones
	// before found nothing.
	stages := []func() []string{
		func() []string {
			if ref.At != "" && ref.At != ref.Path {
				return []string{ref.At, ref.Path}
			}
			return []string{ref.Path}
		},
		func() []string { return localHolders(ref.PIDs) },
		func() []string { return localSameInode(ref) },
	}
	for _, stage := range stages {
		for _, name := range stage() {
			if err := ctx.Err(); err != nil {
				return nil, FileInfo{}, fmt.Errorf("read %s: %w", ref.Path, err)
			}
			if f, info, ok := try(name); ok {
				defer f.Close()
				return readOpen(f, info, off, max)
			}
		}
	}
	return nil, FileInfo{}, nil
}

// localHolders are the open descriptors of pids, as /proc/PID/fd/N: opening
// one opens the very file the process holds, wherever it has gone.
func localHolders(pids []int) []string {
	var names []string
	seen := map[int]bool{}
	for _, pid := range pids {
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		dir := filepath.Join(localProcRoot, strconv.Itoa(pid), "fd")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			names = append(names, filepath.Join(dir, fd.Name()))
		}
	}
	return names
}

// localSameInode are the entries of ref.Path's directory with ref's inode:
// the file renamed beside its old name (moved aside, rotated).
func localSameInode(ref FileRef) []string {
	_, ino, _ := strings.Cut(ref.ID, ":")
	dir := filepath.Dir(ref.Path)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && strconv.FormatUint(st.Ino, 10) == ino {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names
}

func localFileInfo(fi fs.FileInfo) FileInfo {
	info := FileInfo{Exists: true, Size: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.ID = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return info
}

// Processes lists the processes whose command line (arguments joined by
// spaces; "[name]" for kernel threads) matches the regular expression
// match, by pid, leaving out lockstep itself. Zombies are listed, with
// State "Z": whether a zombie counts is the caller's decision.
func (l *Local) Processes(ctx context.Context, match string) ([]ProcessInfo, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return nil, fmt.Errorf("processes: match: %w", err)
	}
	var out []ProcessInfo
	err = eachLocalProcess(func(pid int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pid == l.self {
			return nil
		}
		st, cmdline, err := readLocalProc(pid)
		if err != nil {
			return nil // gone meanwhile, or not ours to read
		}
		command := procCommand(cmdline, st.Comm)
		if !re.MatchString(command) {
			return nil
		}
		out = append(out, ProcessInfo{PID: pid, PPID: st.PPID, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime, State: st.State, Command: command})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("processes %q: %w", match, err)
	}
	return out, nil
}

// Listeners lists the TCP sockets listening on port, IPv4 and IPv6, each
// with the process that holds it. A socket held by several processes (a
// server's forked workers) is listed once per process; one whose holder
// cannot be seen has PID 0. Sorted by pid, then address.
func (l *Local) Listeners(ctx context.Context, port int) ([]Listener, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("listeners: port %d out of range", port)
	}
	socks, err := diagListeners(port)
	if err != nil {
		// sock_diag may be denied (a seccomp filter, an old kernel): /proc
		// says the same, only slower.
		socks, err = procListeners(port)
	}
	if err != nil {
		return nil, fmt.Errorf("listeners on %d: %w", port, err)
	}
	addrs := make(map[uint64]string) // listening socket inode -> address
	for _, s := range socks {
		addrs[s.Inode] = s.Local.String()
	}
	if len(addrs) == 0 {
		return nil, nil
	}
	owned := make(map[uint64]bool)
	var out []Listener
	err = eachLocalProcess(func(pid int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var mine []uint64
		for _, ino := range localSockets(pid) {
			if _, listening := addrs[ino]; listening && !slices.Contains(mine, ino) {
				mine = append(mine, ino)
			}
		}
		if len(mine) == 0 {
			return nil
		}
		command, pgid := "", 0
		if st, cmdline, err := readLocalProc(pid); err == nil {
			command, pgid = procCommand(cmdline, st.Comm), st.PGID
		}
		for _, ino := range mine {
			owned[ino] = true
			out = append(out, Listener{Address: addrs[ino], PID: pid, PGID: pgid, Command: command})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listeners on %d: %w", port, err)
	}
	for ino, addr := range addrs {
		if !owned[ino] {
			out = append(out, Listener{Address: addr})
		}
	}
	sortListeners(out)
	return out, nil
}

// procListeners reads the listening TCP sockets on port from
// /proc/net/tcp and /proc/net/tcp6.
func procListeners(port int) ([]tcpSocket, error) {
	var out []tcpSocket
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		b, err := os.ReadFile(filepath.Join(localProcRoot, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // IPv6 disabled
		}
		if err != nil {
			return nil, err
		}
		socks, err := parseNetTCP(b)
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			if s.State == tcpListen && int(s.Local.Port()) == port {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Dial connects from this machine.
func (l *Local) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Close does nothing: processes started with Start keep running, and
// their reapers keep waiting for them.
func (l *Local) Close() error { return nil }

// eachLocalProcess calls fn with the pid of every process in /proc, in
// increasing order, stopping at fn's first error.
func eachLocalProcess(fn func(pid int) error) error {
	d, err := os.Open(localProcRoot)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("list %s: %w", localProcRoot, err)
	}
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	for _, pid := range pids {
		if err := fn(pid); err != nil {
			return err
		}
	}
	return nil
}

// readLocalStat reads and parses /proc/PID/stat; a process that is gone gives
// an error wrapping fs.ErrNotExist. It reads as a scan does (procDir's
// three system calls, not os.ReadFile's seven): Run reads its shell's,
// Inspect a launch's at every look.
func readLocalStat(pid int) (procStat, error) {
	fd, err := unix.Open(filepath.Join(localProcRoot, strconv.Itoa(pid), "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(filepath.Join(localProcRoot, strconv.Itoa(pid), "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return procStat{}, procErr(pid, "stat", err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1024)
	b, err := readProcFD(fd, &buf, true)
	if err != nil {
		return procStat{}, procErr(pid, "stat", err)
	}
	return parseStat(b)
}

// readLocalProc reads a process's stat and cmdline.
func readLocalProc(pid int) (procStat, []byte, error) {
	st, err := readLocalStat(pid)
	if err != nil {
		return procStat{}, nil, err
	}
	cmdline, err := os.ReadFile(filepath.Join(localProcRoot, strconv.Itoa(pid), "cmdline"))
	if err != nil && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, fs.ErrNotExist) {
		return procStat{}, nil, err
	}
	return st, cmdline, nil
}

// localExitStatus is how a process ended: its exit code, or -1 and the
// signal's name ("SIGKILL") when a signal ended it.
func localExitStatus(ps *os.ProcessState) (int, string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return waitExit(ws)
	}
	return ps.ExitCode(), ""
}

// waitExit is how a process reaped with status ws ended, as
// localExitStatus tells it.
func waitExit(ws syscall.WaitStatus) (int, string) {
	if ws.Signaled() {
		return -1, unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

// localEnviron is this process's environment with env added (env wins):
// each key once, since a program's getenv takes the first of duplicates.
func localEnviron(env map[string]string) []string {
	own := os.Environ()
	out := make([]string, 0, len(own)+len(env))
	for _, kv := range own {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := env[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// cappedBuffer is a writer keeping the first limit bytes and dropping the rest
// (while still taking them, so the command never stalls on a full pipe).
type cappedBuffer struct {
	b     []byte
	limit int
	drop  []byte // what is read past the limit goes to, allocated then
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.limit - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// ReadFrom reads r to its end into the buffer itself, keeping the first
// limit bytes as Write does: io.Copy, which os/exec and an SSH session
// copy a command's output with, would otherwise allocate 32 KiB for each
// stream of each command, most of which print nothing.
func (c *cappedBuffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		buf := c.room()
		n, err := r.Read(buf)
		total += int64(n)
		c.took(buf, n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// room is where the next read goes: the free end of the kept bytes,
// grown as append grows them, or once the limit is reached a buffer
// whose bytes are dropped. took(buf, n) then counts n bytes read into it.
func (c *cappedBuffer) room() []byte {
	room := c.limit - len(c.b)
	if room <= 0 {
		if c.drop == nil {
			c.drop = make([]byte, 32<<10)
		}
		return c.drop
	}
	if cap(c.b) == len(c.b) {
		c.b = slices.Grow(c.b, min(room, max(512, len(c.b))))
	}
	return c.b[len(c.b):min(cap(c.b), len(c.b)+room)]
}

func (c *cappedBuffer) took(buf []byte, n int) {
	if len(c.b) < c.limit { // room gave the kept bytes' end
		c.b = c.b[:len(c.b)+n]
	}
}

var (
	_ io.Writer     = (*cappedBuffer)(nil)
	_ io.ReaderFrom = (*cappedBuffer)(nil)
)
