package targets

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"lockstep/internal/cpubench"
)

// localPatience bounds every wait in these tests: generous, so a loaded machine
// does not fail them, yet a hang fails rather than stalls.
const localPatience = 30 * time.Second

// localHelperEnv makes the test binary act as a helper process (see
// TestLocalHelperProcess).
const localHelperEnv = "LOCKSTEP_TARGETS_HELPER"

// localHelper returns a command running the test binary as the helper kind.
func localHelper(kind string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{localHelperEnv + "=" + kind}, env...)...)
	return cmd
}

// TestLocalHelperProcess is not a test: it is the body of helper processes
// that other tests start (and a no-op otherwise).
func TestLocalHelperProcess(t *testing.T) {
	switch os.Getenv(localHelperEnv) {
	case "":
		return
	case "start":
		// Launch a process, report it, and exit: the launch must outlive us.
		l := NewLocal()
		p, err := l.Start(context.Background(), Command{Line: os.Getenv("HELPER_LINE")}, os.Getenv("HELPER_LOG"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(p)
		os.Exit(0)
	case "listen":
		// Listen on a port over IPv4 and IPv6, say which, and wait.
		ln4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		port := ln4.Addr().(*net.TCPAddr).Port
		if _, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", port)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(port)
		time.Sleep(localPatience)
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(localHelperEnv))
		os.Exit(2)
	}
}

func localTestContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), localPatience)
	t.Cleanup(cancel)
	return ctx
}

// localEventually polls cond until it holds, failing the test after localPatience.
func localEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), localPatience)
	defer cancel()
	if err := pollUntil(ctx, 10*time.Millisecond, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waited %v for %s", localPatience, what)
	}
}

// mustStart launches line on tg, logging to a fresh file.
func mustStart(t *testing.T, ctx context.Context, tg Target, line string) Process {
	t.Helper()
	p, err := tg.Start(ctx, Command{Line: line}, filepath.Join(t.TempDir(), "launch.log"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// localStart launches line, logging to a fresh file, and stops it when the test ends.
func localStart(t *testing.T, l *Local, line string) Process {
	t.Helper()
	p := mustStart(t, localTestContext(t), l, line)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), localPatience)
		defer cancel()
		if err := l.Stop(ctx, p, 0); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return p
}

// localLogLines waits for the launch's log to hold n lines and returns them.
func localLogLines(t *testing.T, p Process, n int) []string {
	t.Helper()
	var lines []string
	localEventually(t, fmt.Sprintf("%d lines in %s", n, p.Log), func() bool {
		b, _ := os.ReadFile(p.Log)
		lines = strings.Fields(string(b))
		return len(lines) >= n
	})
	return lines
}

func localAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gone reports whether pid has no live process (missing or zombie).
func localGone(pid int) bool {
	st, err := readLocalStat(pid)
	return err != nil || st.Zombie()
}

func TestLocalRun(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	dir := t.TempDir()
	tests := []struct {
		name        string
		cmd         Command
		code        int
		signal      string
		out, errOut string
	}{
		{name: "exit code", cmd: Command{Line: "echo out; echo err >&2; exit 3"}, code: 3, out: "out\n", errOut: "err\n"},
		{name: "env added", cmd: Command{Line: `printf %s "$LOCKSTEP_A,$HOME"`, Env: map[string]string{"LOCKSTEP_A": "x y"}}, out: "x y," + os.Getenv("HOME")},
		{name: "env overrides", cmd: Command{Line: `printf %s "$HOME"`, Env: map[string]string{"HOME": "/elsewhere"}}, out: "/elsewhere"},
		{name: "dir", cmd: Command{Line: "pwd", Dir: dir}, out: dir + "\n"},
		{name: "killed by a signal", cmd: Command{Line: "kill -TERM $$"}, code: -1, signal: "SIGTERM"},
		{name: "missing command", cmd: Command{Line: "no-such-command-lockstep"}, code: 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := l.Run(ctx, tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.code || res.Signal != tt.signal {
				t.Errorf("exit %d %q, want %d %q (stderr %q)", res.ExitCode, res.Signal, tt.code, tt.signal, res.Stderr)
			}
			if tt.out != "" && string(res.Stdout) != tt.out {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.out)
			}
			if tt.errOut != "" && string(res.Stderr) != tt.errOut {
				t.Errorf("stderr %q, want %q", res.Stderr, tt.errOut)
			}
		})
	}
	if _, err := l.Run(ctx, Command{Line: "true", Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Error("Run in a missing directory: no error")
	}
}

func TestLocalRunCancelKillsPipeline(t *testing.T) {
	l := NewLocal()
	marker := fmt.Sprintf("%d.%d", 100+os.Getpid()%100, time.Now().UnixNano()%1000000)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	res, err := l.Run(ctx, Command{Line: "sleep " + marker + " | cat"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run after its deadline: err %v, want one wrapping DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Run took %v to give up after a 500ms deadline", took)
	}
	if res.Signal != "SIGKILL" {
		t.Errorf("shell ended with %d %q, want SIGKILL", res.ExitCode, res.Signal)
	}
	localEventually(t, "the pipeline's sleep to die", func() bool {
		ps, err := l.Processes(t.Context(), `^sleep `+regexp.QuoteMeta(marker)+`$`)
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(ps, func(p ProcessInfo) bool { return p.State != "Z" })
	})
}

// A run's command is marked: what it leaves running when it exits, in a
// session of its own, orphaned by a double fork or with its environment
// emptied, is found by the mark Run returns, and stopped by it; another
// run's leftover is not among them.
// The look a run step makes (Result.Owned: what started since the
// command) finds what the command left in a session of its own with an
// emptied environment, also when earlier looks of the same target have
// read, and kept the ages of, every other process; and it finds nothing
// where nothing was left.
func TestLocalRunLeftoversAfterEarlierLooks(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	for range 3 {
		res, err := l.Run(ctx, Command{Line: "true"})
		if err != nil {
			t.Fatal(err)
		}
		if ms, err := l.Members(ctx, res.Owned()); err != nil || len(ms) != 0 {
			t.Fatalf("members after true: %v, %v; want none", ms, err)
		}
	}
	res, err := l.Run(ctx, Command{Line: `setsid sh -c 'exec env -i sleep 100' >/dev/null 2>&1 & echo $!`})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d, stderr %q", err, res.ExitCode, res.Stderr)
	}
	t.Cleanup(func() { l.Stop(context.Background(), res.Owned(), 0) })
	pid := localAtoi(t, strings.TrimSpace(string(res.Stdout)))
	ms, err := l.Members(ctx, res.Owned())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].PID != pid {
		t.Errorf("members %+v, want only pid %d", ms, pid)
	}
}

// The look for what a run's command left lists only the pids from its
// shell's to the last one made, when the pids cannot have come round
// meanwhile: it finds what the command left there; and it falls back to
// every process when the pids came round (the last pid below the
// shell's) or when more forks than half the free pids were made.
func TestLocalRunLooksAtItsPidsOnly(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	d, err := openProcDir(&l.scanBufs)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if !l.seekable(d) {
		t.Fatal("this kernel's /proc does not list from a pid on as TGID_OFFSET says")
	}
	if ents, err := d.listRange(l.self, l.self); err != nil || len(ents) != 1 || ents[0].pid != l.self {
		t.Fatalf("listRange(self, self) = %v, %v; want lockstep alone", ents, err)
	}
	res, err := l.Run(ctx, Command{Line: `setsid sh -c 'exec env -i sleep 100' >/dev/null 2>&1 & echo $!`})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d, stderr %q", err, res.ExitCode, res.Stderr)
	}
	t.Cleanup(func() { l.Stop(context.Background(), res.Owned(), 0) })
	pid := localAtoi(t, strings.TrimSpace(string(res.Stdout)))
	from := res.Owned().from
	lo, hi, ok := l.pidRange(d, from)
	if !ok || lo != from.pid || hi < pid || pid <= lo {
		t.Fatalf("pidRange = %d, %d, %v; want from the shell's pid %d past the leftover's %d", lo, hi, ok, from.pid, pid)
	}
	ms, err := l.Members(ctx, res.Owned())
	if err != nil || len(ms) != 1 || ms[0].PID != pid {
		t.Fatalf("members %+v, %v; want only pid %d", ms, err, pid)
	}
	for name, f := range map[string]procFrom{
		"come round":     {pid: 1<<22 + 1, forks: from.forks}, // past any pid_max
		"too many forks": {pid: from.pid, forks: 1},
	} {
		if _, _, ok := l.pidRange(d, f); ok {
			t.Errorf("%s: pidRange listed a range", name)
		}
	}
}

func TestLocalRunLeftovers(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	res, err := l.Run(ctx, Command{Line: `setsid sleep 100 >/dev/null 2>&1 & echo $!
( sleep 100 >/dev/null 2>&1 & echo $! )
( setsid env -i sleep 100 >/dev/null 2>&1 & echo $! )`})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d, stderr %q", err, res.ExitCode, res.Stderr)
	}
	if res.Mark == "" {
		t.Fatal("Run returned no mark")
	}
	other, err := l.Run(ctx, Command{Line: "setsid sleep 100 >/dev/null 2>&1 & echo $!"})
	if err != nil {
		t.Fatal(err)
	}
	otherPID := localAtoi(t, strings.TrimSpace(string(other.Stdout)))
	t.Cleanup(func() { l.Stop(context.Background(), Process{Mark: other.Mark}, 0) })

	ms, err := l.Members(ctx, Process{Mark: res.Mark})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, m := range ms {
		pids = append(pids, m.PID)
	}
	left := strings.Fields(string(res.Stdout))
	if len(left) != 3 {
		t.Fatalf("stdout %q, want 3 pids", res.Stdout)
	}
	for _, k := range left {
		if !slices.Contains(pids, localAtoi(t, k)) {
			t.Errorf("pid %s, left by the run, is not among its members %v", k, pids)
		}
	}
	if slices.Contains(pids, otherPID) {
		t.Errorf("another run's pid %d is among the members %v", otherPID, pids)
	}
	if slices.Contains(pids, os.Getpid()) || len(pids) != 3 {
		t.Errorf("members %v, want the 3 left: %v", pids, left)
	}
	if err := l.Stop(ctx, Process{Mark: res.Mark}, localPatience); err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		if !localGone(localAtoi(t, k)) {
			t.Errorf("pid %s alive after Stop", k)
		}
	}
	if localGone(otherPID) {
		t.Error("Stop ended another run's leftover")
	}
}

// A run cut short ends all its command started, also what left the
// shell's group and session (setsid), and returns once it is gone.
func TestLocalRunCancelStopsTree(t *testing.T) {
	l := NewLocal()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(localTestContext(t))
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := l.Run(ctx, Command{Line: `setsid sh -c 'echo $$ >` + pidfile + `.tmp && mv ` + pidfile + `.tmp ` + pidfile + `; exec sleep 100' >/dev/null 2>&1 &
exec sleep 100`})
		done <- ran{res, err}
	}()
	var pid int
	localEventually(t, "the setsid child to write its pid", func() bool {
		b, err := os.ReadFile(pidfile)
		if err == nil {
			pid = localAtoi(t, strings.TrimSpace(string(b)))
		}
		return err == nil
	})
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Run cancelled: err %v, want one wrapping context.Canceled", r.err)
	}
	if !localGone(pid) {
		t.Errorf("the setsid child (pid %d) is alive after the run was cancelled", pid)
	}
	if ms, err := l.Members(t.Context(), Process{Mark: r.res.Mark}); err != nil || len(ms) > 0 {
		t.Errorf("members after the cancelled run: %v, %v; want none", ms, err)
	}
}

func TestLocalStartAlive(t *testing.T) {
	l := NewLocal()
	p := localStart(t, l, "echo started; exec sleep 100")
	if p.PID <= 0 {
		t.Fatalf("pid %d", p.PID)
	}
	if pgid, err := syscall.Getpgid(p.PID); err != nil || pgid != p.PGID || pgid != p.PID {
		t.Errorf("pgid %d, the kernel says %d (%v); a new session leads its group", p.PGID, pgid, err)
	}
	if sid, _ := localSession(p.PID); sid != p.PID {
		t.Errorf("session %d, want its own (%d)", sid, p.PID)
	}
	// Field 22, read independently of our parser ("sleep" has no spaces).
	out, err := exec.Command("sh", "-c", fmt.Sprintf("cut -d' ' -f22 /proc/%d/stat", p.PID)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); strconv.FormatUint(p.StartTime, 10) != want {
		t.Errorf("start time %d, /proc says %s", p.StartTime, want)
	}
	if !strings.Contains(p.Command, "sleep 100") {
		t.Errorf("command %q, want it to show sleep 100", p.Command)
	}
	if lines := localLogLines(t, p, 1); lines[0] != "started" {
		t.Errorf("log %q, want started", lines)
	}
	st, err := l.Inspect(localTestContext(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Alive || st.Exited || st.Replaced {
		t.Errorf("Inspect of a running sleep = %+v, want alive", st)
	}
	// Stdin is /dev/null.
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", p.PID))
	if err != nil || link != "/dev/null" {
		t.Errorf("stdin is %q (%v), want /dev/null", link, err)
	}
}

func localSession(pid int) (int, error) {
	st, err := readLocalStat(pid)
	return st.Session, err
}

func TestLocalStartLog(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "deep", "er", "server.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file there is someone else's: nothing starts.
	marker := filepath.Join(dir, "started")
	if _, err := l.Start(ctx, Command{Line: "touch " + marker}, log); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Start on an existing log: %v; want an error wrapping fs.ErrExist", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Start refused the log but ran the command")
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	p, err := l.Start(ctx, Command{Line: `echo "out $GREETING"; pwd; echo err >&2`, Env: map[string]string{"GREETING": "hi"}, Dir: dir}, log)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := l.Stat(ctx, log); p.LogID == "" || p.LogID != fi.ID {
		t.Errorf("LogID %q, the log's ID %q", p.LogID, fi.ID)
	}
	localEventually(t, "the localLaunch to exit", func() bool {
		st, err := l.Inspect(ctx, p)
		return err == nil && st.Exited
	})
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "out hi\n" + dir + "\nerr\n"; string(b) != want {
		t.Errorf("log %q, want %q (both streams)", b, want)
	}

	// Parent directories are made.
	p, err = l.Start(ctx, Command{Line: "true"}, filepath.Join(dir, "new", "dir", "x.log"))
	if err != nil {
		t.Fatalf("Start with a log in a missing directory: %v", err)
	}
	if _, err := os.Stat(p.Log); err != nil {
		t.Error(err)
	}

	// A relative log is lockstep's, and recorded absolute.
	t.Chdir(dir)
	p, err = l.Start(ctx, Command{Line: "true"}, "rel.log")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "rel.log"); p.Log != want {
		t.Errorf("log recorded as %q, want %q", p.Log, want)
	}
}

func TestLocalInspectExitCode(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	for _, tt := range []struct {
		line   string
		code   int
		signal string
	}{
		{"exit 3", 3, ""},
		{"exit 0", 0, ""},
		{"no-such-command-lockstep", 127, ""},
		{"kill -KILL $$", -1, "SIGKILL"},
	} {
		t.Run(tt.line, func(t *testing.T) {
			p, err := l.Start(ctx, Command{Line: tt.line}, filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			var st ProcessState
			localEventually(t, "the exit", func() bool {
				st, err = l.Inspect(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				return !st.Alive
			})
			if !st.Exited || st.Replaced || st.ExitCode != tt.code || st.Signal != tt.signal {
				t.Errorf("Inspect = %+v, want exited with %d %q", st, tt.code, tt.signal)
			}
			// A Local that did not start it knows only that it is gone.
			st, err = NewLocal().Inspect(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Alive || !st.Exited || st.ExitCode != -1 {
				t.Errorf("Inspect from another Local = %+v, want exited, code unknown", st)
			}
		})
	}
}

func TestLocalInspectZombie(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	// The shell forks a short sleep, then becomes a long one that never
	// reaps it: the short sleep ends as a zombie.
	parent := localStart(t, l, "sleep 0.2 & echo $!; exec sleep 100")
	child := localAtoi(t, localLogLines(t, parent, 1)[0])
	var st procStat
	localEventually(t, "the child to become a zombie", func() bool {
		var err error
		st, err = readLocalStat(child)
		if err != nil {
			t.Fatalf("the zombie was reaped: %v", err)
		}
		return st.State == "Z"
	})
	// Signal 0 still reaches it: liveness by kill -0 alone would be wrong.
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("kill -0 on a zombie: %v (the premise of this test)", err)
	}
	got, err := l.Inspect(ctx, Process{PID: child, PGID: parent.PGID, StartTime: st.StartTime})
	if err != nil {
		t.Fatal(err)
	}
	if got.Alive || !got.Exited || got.Replaced || got.ExitCode != -1 {
		t.Errorf("Inspect of a zombie = %+v, want exited, code unknown", got)
	}
}

func TestLocalInspectReplaced(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	p := localStart(t, l, "exec sleep 100")
	for _, other := range []*Local{l, NewLocal()} {
		q := p
		q.StartTime++
		st, err := other.Inspect(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Replaced || st.Alive || !st.Exited {
			t.Errorf("Inspect with another start time = %+v, want replaced", st)
		}
		// The pid alone (no start time known) reads as alive.
		q.StartTime = 0
		if st, err := other.Inspect(ctx, q); err != nil || !st.Alive {
			t.Errorf("Inspect without a start time = %+v, %v; want alive", st, err)
		}
	}
	if _, err := l.Inspect(ctx, Process{}); err == nil {
		t.Error("Inspect of pid 0: no error")
	}
}

func TestLocalStopGroup(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	p := localStart(t, l, "sleep 100 & echo $!; sleep 100 | cat & echo $!; wait")
	kids := localLogLines(t, p, 2)
	if err := l.Stop(ctx, p, localPatience); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(kids, strconv.Itoa(p.PID)) {
		if !localGone(localAtoi(t, k)) {
			t.Errorf("pid %s still alive after Stop", k)
		}
	}
	if n, _ := localGroupMembers(p.PGID); n != 0 {
		t.Errorf("%d processes left in group %d", n, p.PGID)
	}
	st, err := l.Inspect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Exited || st.Signal != "SIGTERM" {
		t.Errorf("after Stop: %+v, want ended by SIGTERM", st)
	}
	// Stopping again is a no-op.
	if err := l.Stop(ctx, p, localPatience); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestLocalStopKillsAfterGrace(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	// An ignored signal stays ignored across fork and exec: nothing here
	// dies of TERM.
	p := localStart(t, l, "trap '' TERM; sleep 100 & echo $!; wait")
	kid := localAtoi(t, localLogLines(t, p, 1)[0])
	if err := l.Stop(ctx, p, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !localGone(kid) || !localGone(p.PID) {
		t.Errorf("alive after Stop: shell %v, child %v", !localGone(p.PID), !localGone(kid))
	}
	st, err := l.Inspect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Signal != "SIGKILL" {
		t.Errorf("after Stop: %+v, want ended by SIGKILL", st)
	}
}

func TestLocalStopContextEnds(t *testing.T) {
	l := NewLocal()
	p := localStart(t, l, "trap '' TERM; echo ready; exec sleep 100")
	localLogLines(t, p, 1) // TERM is ignored from now on
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := l.Stop(ctx, p, localPatience)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop past its context: %v, want DeadlineExceeded", err)
	}
	if localGone(p.PID) {
		t.Error("the process died of TERM though it ignores it")
	}
}

func TestLocalStopRefuses(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	own, _ := syscall.Getpgid(0)
	for _, p := range []Process{{PID: 1, PGID: 0}, {PID: 1, PGID: 1}, {PGID: -5}, {PGID: own}} {
		if err := l.Stop(ctx, p, time.Second); err == nil {
			t.Errorf("Stop(%+v): no error", p)
		}
	}
	// A replaced pid: nothing is signalled. The newcomer does not carry
	// the launch's mark, and its start time is not the launch's.
	p := localStart(t, l, "exec sleep 100")
	q := p
	q.StartTime++
	q.Mark = ""
	if err := l.Stop(ctx, q, time.Second); err != nil {
		t.Fatal(err)
	}
	if localGone(p.PID) {
		t.Error("Stop of a replaced process killed the newcomer")
	}
}

func TestLocalStartSurvivesItsParent(t *testing.T) {
	log := filepath.Join(t.TempDir(), "survivor.log")
	cmd := localHelper("start", "HELPER_LINE=echo up; exec sleep 100", "HELPER_LOG="+log)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var p Process
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("helper said %q: %v", out, err)
	}
	l := NewLocal()
	ctx := localTestContext(t)
	t.Cleanup(func() { _ = l.Stop(context.Background(), p, 0) })
	st, err := l.Inspect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Alive {
		t.Fatalf("the localLaunch died with its parent: %+v", st)
	}
	if ps, _ := readLocalStat(p.PID); ps.PPID == cmd.Process.Pid {
		t.Errorf("parent is still the helper %d", ps.PPID)
	}
	if err := l.Stop(ctx, p, localPatience); err != nil {
		t.Fatal(err)
	}
	st, err = l.Inspect(ctx, p)
	if err != nil || !st.Exited {
		t.Errorf("after Stop: %+v %v, want exited", st, err)
	}
}

func TestLocalMoveAside(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	path := filepath.Join(t.TempDir(), "server.log")
	if got, err := l.MoveAside(ctx, path); got != "" || err != nil {
		t.Errorf("MoveAside of a missing file = %q, %v; want \"\", nil", got, err)
	}
	moved := map[string]string{}
	for i := range 4 {
		content := fmt.Sprintf("run %d\n", i)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := l.MoveAside(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, path+".prev-") {
			t.Errorf("moved to %q, want %s.prev-...", got, path)
		}
		if _, dup := moved[got]; dup {
			t.Fatalf("moved twice to %q", got)
		}
		moved[got] = content
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after MoveAside: %v", path, err)
		}
	}
	for name, content := range moved {
		if b, err := os.ReadFile(name); err != nil || string(b) != content {
			t.Errorf("%s holds %q (%v), want %q", name, b, err, content)
		}
	}
	// The low-level rename refuses to replace.
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	os.WriteFile(a, []byte("a"), 0o644)
	os.WriteFile(b, []byte("b"), 0o644)
	if err := renameNoReplace(a, b); !errors.Is(err, fs.ErrExist) {
		t.Errorf("rename onto an existing file: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(b); string(got) != "b" {
		t.Errorf("the existing file now holds %q", got)
	}
}

func TestLocalReadAt(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	path := filepath.Join(t.TempDir(), "app.log")

	data, info, err := l.ReadAt(ctx, path, 0, 100)
	if err != nil || info.Exists || data != nil {
		t.Fatalf("ReadAt of a missing file = %q, %+v, %v; want nothing, no error", data, info, err)
	}
	if info, err := l.Stat(ctx, path); err != nil || info.Exists {
		t.Fatalf("Stat of a missing file = %+v, %v", info, err)
	}

	write := func(flag int, s string) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	read := func(off int64, max int) (string, FileInfo) {
		t.Helper()
		b, info, err := l.ReadAt(ctx, path, off, max)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), info
	}

	write(os.O_TRUNC, "hello\n")
	got, first := read(0, 100)
	if got != "hello\n" || !first.Exists || first.Size != 6 || first.ID == "" {
		t.Fatalf("first read %q %+v", got, first)
	}
	if st, _ := l.Stat(ctx, path); st.ID != first.ID || st.Size != 6 {
		t.Errorf("Stat %+v disagrees with ReadAt's %+v", st, first)
	}
	if got, _ := read(0, 3); got != "hel" {
		t.Errorf("read of 3 bytes = %q", got)
	}

	// Growth: read from where we were.
	write(os.O_APPEND, "world\n")
	got, info = read(6, 100)
	if got != "world\n" || info.ID != first.ID || info.Size != 12 {
		t.Errorf("after growth: %q %+v", got, info)
	}
	if got, _ := read(12, 100); got != "" {
		t.Errorf("read at the end = %q", got)
	}

	// Truncation: same file, smaller than our offset.
	write(os.O_TRUNC, "new\n")
	got, info = read(12, 100)
	if got != "" || info.ID != first.ID || info.Size >= 12 {
		t.Errorf("after truncation: %q %+v; want nothing, same ID, size below 12", got, info)
	}

	// Rotation: the name now holds another file.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write(os.O_TRUNC, "rotated\n")
	got, info = read(0, 100)
	if got != "rotated\n" || info.ID == first.ID {
		t.Errorf("after rotation: %q %+v; want a new ID (was %s)", got, info, first.ID)
	}

	if _, _, err := l.ReadAt(ctx, path, -1, 10); err == nil {
		t.Error("negative offset: no error")
	}
}

func TestLocalProcesses(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	marker := fmt.Sprintf("%d.%06d", 200+os.Getpid()%100, time.Now().UnixNano()%1000000)
	p := localStart(t, l, "exec sleep "+marker)
	var ps []ProcessInfo
	localEventually(t, "the sleep to show", func() bool {
		var err error
		ps, err = l.Processes(ctx, `^sleep `+regexp.QuoteMeta(marker)+`$`)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps) == 1
	})
	want := ProcessInfo{PID: p.PID, PPID: os.Getpid(), PGID: p.PGID, Session: p.Session, StartTime: p.StartTime, State: ps[0].State, Command: "sleep " + marker}
	if ps[0] != want || !strings.ContainsAny(ps[0].State, "SR") {
		t.Errorf("Processes = %+v, want %+v", ps[0], want)
	}

	// lockstep itself is left out, even when it matches.
	self, err := l.Processes(ctx, regexp.QuoteMeta(os.Args[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range self {
		if p.PID == os.Getpid() {
			t.Errorf("Processes lists lockstep itself: %+v", p)
		}
	}
	// Kernel threads match by [name].
	if kt, err := l.Processes(ctx, `^\[kthreadd\]$`); err != nil || len(kt) != 1 || kt[0].PID != 2 {
		t.Logf("kthreadd: %+v %v (no kernel threads visible here?)", kt, err)
	}

	if _, err := l.Processes(ctx, "("); err == nil {
		t.Error("a bad regular expression: no error")
	}
}

func TestLocalListenersOwn(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	for _, tt := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		t.Run(tt.network, func(t *testing.T) {
			ln, err := net.Listen(tt.network, tt.addr)
			if err != nil {
				t.Skipf("cannot listen: %v", err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			got, err := l.Listeners(ctx, port)
			if err != nil {
				t.Fatal(err)
			}
			want := Listener{Address: ln.Addr().String(), PID: os.Getpid(), PGID: syscall.Getpgrp(), Command: procCommand(localMustRead(t, "/proc/self/cmdline"), "")}
			if len(got) != 1 || got[0] != want {
				t.Errorf("Listeners(%d) = %+v, want [%+v]", port, got, want)
			}
			// An accepted connection on the same port is no listener.
			c, err := net.Dial(tt.network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got, _ := l.Listeners(ctx, port); len(got) != 1 {
				t.Errorf("with a connection open: %+v", got)
			}
			ln.Close()
			if got, err := l.Listeners(ctx, port); err != nil || len(got) != 0 {
				t.Errorf("after Close: %+v %v, want none", got, err)
			}
		})
	}
	if _, err := l.Listeners(ctx, 70000); err == nil {
		t.Error("port 70000: no error")
	}
}

func localMustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLocalListenersChild(t *testing.T) {
	cmd := localHelper("listen")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	port := localAtoi(t, strings.TrimSpace(line))
	got, err := NewLocal().Listeners(localTestContext(t), port)
	if err != nil {
		t.Fatal(err)
	}
	p := strconv.Itoa(port)
	want := []string{"127.0.0.1:" + p, "[::1]:" + p}
	var addrs []string
	for _, g := range got {
		if g.PID != cmd.Process.Pid || !strings.Contains(g.Command, filepath.Base(os.Args[0])) {
			t.Errorf("listener %+v, want pid %d running %s", g, cmd.Process.Pid, os.Args[0])
		}
		addrs = append(addrs, g.Address)
	}
	if !slices.Equal(addrs, want) {
		t.Errorf("addresses %q, want %q", addrs, want)
	}
}

func TestLocalDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := NewLocal().Dial(localTestContext(t), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if _, err := NewLocal().Dial(localTestContext(t), "tcp", ln.Addr().String()); err == nil {
		t.Error("Dial to a closed port: no error")
	}
}

func BenchmarkLocalInspect(b *testing.B) {
	l := NewLocal()
	ctx := context.Background()
	p, err := l.Start(ctx, Command{Line: "exec sleep 100"}, filepath.Join(b.TempDir(), "log"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Stop(ctx, p, 0)
	for _, bc := range []struct {
		name string
		l    *Local
	}{{"started", l}, {"known-by-value", NewLocal()}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if st, err := bc.l.Inspect(ctx, p); err != nil || !st.Alive {
					b.Fatal(st, err)
				}
			}
		})
	}
}

// BenchmarkReadAtIncremental follows a growing log: each round appends a
// line and reads what is new.
func BenchmarkLocalReadAtIncremental(b *testing.B) {
	l := NewLocal()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(strings.Repeat("x", 99) + "\n")
	var off int64
	for b.Loop() {
		f.Write(line)
		data, _, err := l.ReadAt(ctx, path, off, 1<<20)
		if err != nil || len(data) != len(line) {
			b.Fatal(len(data), err)
		}
		off += int64(len(data))
	}
}

func BenchmarkLocalListeners(b *testing.B) {
	l := NewLocal()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for b.Loop() {
		if got, err := l.Listeners(ctx, port); err != nil || len(got) != 1 {
			b.Fatal(got, err)
		}
	}
}

// The netlink answer and /proc's text agree, socket for socket.
func TestLocalDiagMatchesProc(t *testing.T) {
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln4.Close()
	port := ln4.Addr().(*net.TCPAddr).Port
	for _, addr := range []string{fmt.Sprintf("[::1]:%d", port), fmt.Sprintf("127.0.0.2:%d", port)} {
		if ln, err := net.Listen("tcp", addr); err == nil {
			defer ln.Close()
		}
	}
	// Another port's listener and a connection on ours are left out.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := net.Dial("tcp", ln4.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	viaDiag, err := diagListeners(port)
	if err != nil {
		t.Skipf("sock_diag unavailable: %v", err)
	}
	viaProc, err := procListeners(port)
	if err != nil {
		t.Fatal(err)
	}
	key := func(a, b tcpSocket) int { return int(a.Inode) - int(b.Inode) }
	slices.SortFunc(viaDiag, key)
	slices.SortFunc(viaProc, key)
	if len(viaProc) < 2 || !slices.Equal(viaDiag, viaProc) {
		t.Errorf("sock_diag: %+v\n/proc:     %+v", viaDiag, viaProc)
	}
}

func TestLocalParseDiagMsg(t *testing.T) {
	if _, err := parseDiagMsg(make([]byte, 10)); err == nil {
		t.Error("a short message: no error")
	}
	b := make([]byte, inetDiagMsgLen)
	b[0] = 99
	if _, err := parseDiagMsg(b); err == nil {
		t.Error("an unknown family: no error")
	}
}

func BenchmarkLocalListenerSockets(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, bc := range []struct {
		name string
		fn   func(int) ([]tcpSocket, error)
	}{{"sock_diag", diagListeners}, {"proc", procListeners}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if s, err := bc.fn(port); err != nil || len(s) != 1 {
					b.Fatal(s, err)
				}
			}
		})
	}
}

func BenchmarkLocalProcesses(b *testing.B) {
	l := NewLocal()
	for b.Loop() {
		if _, err := l.Processes(context.Background(), `^sleep `); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLocalCapped(t *testing.T) {
	c := cappedBuffer{limit: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want all taken", s, n, err)
		}
	}
	if string(c.b) != "abcde" {
		t.Errorf("kept %q, want abcde", c.b)
	}
	// As io.Copy feeds it (os/exec, an SSH session): read to the end,
	// the first limit bytes kept, whatever the reads' sizes.
	for _, limit := range []int{0, 5, 511, 512, 513, 5000, 100000} {
		src := strings.Repeat("0123456789", 1000)
		c := cappedBuffer{limit: limit}
		n, err := io.Copy(&c, iotest.OneByteReader(strings.NewReader(src[:3])))
		if err != nil || n != 3 {
			t.Fatalf("limit %d: copied %d, %v", limit, n, err)
		}
		n, err = io.Copy(&c, iotest.HalfReader(strings.NewReader(src[3:])))
		if err != nil || n != int64(len(src)-3) {
			t.Fatalf("limit %d: copied %d, %v; want %d", limit, n, err, len(src)-3)
		}
		if want := src[:min(limit, len(src))]; string(c.b) != want {
			t.Errorf("limit %d: kept %d bytes, want the first %d", limit, len(c.b), len(want))
		}
	}
	broken := errors.New("broken")
	c = cappedBuffer{limit: 5}
	if _, err := io.Copy(&c, iotest.DataErrReader(iotest.ErrReader(broken))); !errors.Is(err, broken) {
		t.Errorf("a read's error: %v, want %v", err, broken)
	}
}

func TestLocalStopContinuesStopped(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	p := localStart(t, l, "exec sleep 100")
	if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	localEventually(t, "the process to stop", func() bool {
		st, err := readLocalStat(p.PID)
		return err == nil && st.State == "T"
	})
	// A long grace: only TERM, once continued, can end it in time.
	if err := l.Stop(ctx, p, localPatience); err != nil {
		t.Fatal(err)
	}
	if st, err := l.Inspect(ctx, p); err != nil || st.Signal != "SIGTERM" {
		t.Errorf("after Stop: %+v %v, want ended by SIGTERM", st, err)
	}
}

func FuzzLocalParseDiagMsg(f *testing.F) {
	msg := make([]byte, inetDiagMsgLen)
	msg[0], msg[1] = syscall.AF_INET6, tcpListen
	f.Add(msg)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseDiagMsg(b)
		if err == nil && !s.Local.IsValid() {
			t.Errorf("parsed %+v with an invalid address", s)
		}
	})
}

// BenchmarkLocalRun is the cost of a run (an exec probe's observation):
// the command, marked at its fork, and with the look for what it left,
// which the runner makes after every run step and exec probe, beside the
// anchor, a Go exec of true. cpu-us/op is this process's CPU time,
// child-cpu-us/op that of the commands (a shell and true, or true).
func BenchmarkLocalRun(b *testing.B) {
	l := NewLocal()
	ctx := b.Context()
	b.Run("Run", func(b *testing.B) {
		cpu := cpubench.Now()
		for b.Loop() {
			if _, err := l.Run(ctx, Command{Line: "true"}); err != nil {
				b.Fatal(err)
			}
		}
		reportRunCPU(b, cpu)
	})
	b.Run("RunThenLook", func(b *testing.B) {
		cpu := cpubench.Now()
		for b.Loop() {
			r, err := l.Run(ctx, Command{Line: "true"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Members(ctx, r.Owned()); err != nil {
				b.Fatal(err)
			}
		}
		reportRunCPU(b, cpu)
	})
	b.Run("ExecTrue", func(b *testing.B) {
		cpu := cpubench.Now()
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		reportRunCPU(b, cpu)
	})
}

func reportRunCPU(b *testing.B, m cpubench.Mark) {
	if self, children, ok := m.Since(); ok {
		b.ReportMetric(float64(self.Microseconds())/float64(b.N), "cpu-us/op")
		b.ReportMetric(float64(children.Microseconds())/float64(b.N), "child-cpu-us/op")
	}
}
