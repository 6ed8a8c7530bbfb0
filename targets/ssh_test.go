package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
	"lockstep/targets/sshtest"
)

// testSSH is an SSH target for srv, with its key and known_hosts, and no
// ssh-agent: tests must not depend on the developer's keys.
func testSSH(t testing.TB, srv *sshtest.Server, edit ...func(*SSHConfig)) *SSH {
	t.Helper()
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := SSHConfig{
		Host:          srv.Host,
		Port:          srv.Port,
		User:          srv.User,
		IdentityFiles: []string{srv.UserKey},
		KnownHosts:    []string{srv.KnownHosts},
	}
	for _, e := range edit {
		e(&cfg)
	}
	s := NewSSH("remote", cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestSSHRun(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv, func(c *SSHConfig) { c.Env = map[string]string{"TARGET_VAR": "from target", "OVERRIDDEN": "target"} })
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()

	tests := []struct {
		name       string
		cmd        Command
		code       int
		signal     string
		stdout     string
		stderrPart string
	}{
		{name: "success", cmd: Command{Line: "echo hello"}, stdout: "hello\n"},
		{name: "exit code", cmd: Command{Line: "echo oops >&2; exit 3"}, code: 3, stderrPart: "oops"},
		{name: "not found", cmd: Command{Line: "no-such-command-lockstep"}, code: 127, stderrPart: "not found"},
		{name: "killed by a signal", cmd: Command{Line: "kill -9 $$"}, code: -1, signal: "SIGKILL"},
		{name: "quotes survive", cmd: Command{Line: `printf '%s|' "$A" "$B"`, Env: map[string]string{"A": `it's "x" $HOME`, "B": "a\nb"}}, stdout: "it's \"x\" $HOME|a\nb|"},
		{name: "env: target and command, command wins", cmd: Command{Line: `echo "$TARGET_VAR/$OVERRIDDEN"`, Env: map[string]string{"OVERRIDDEN": "command"}}, stdout: "from target/command\n"},
		{name: "working directory", cmd: Command{Line: "pwd", Dir: dir}, stdout: dir + "\n"},
		{name: "missing directory", cmd: Command{Line: "pwd", Dir: dir + "/nope"}, code: 2, stderrPart: "nope"},
		{name: "runs with sh, not the login shell", cmd: Command{Line: `echo "${BASH_VERSION:-none}"`}, stdout: "none\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Run(ctx, tt.cmd)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if r.ExitCode != tt.code || r.Signal != tt.signal {
				t.Errorf("exit %d %q, want %d %q (stderr %q)", r.ExitCode, r.Signal, tt.code, tt.signal, r.Stderr)
			}
			if tt.stdout != "" && string(r.Stdout) != tt.stdout {
				t.Errorf("stdout %q, want %q", r.Stdout, tt.stdout)
			}
			if !strings.Contains(string(r.Stderr), tt.stderrPart) {
				t.Errorf("stderr %q, want it to contain %q", r.Stderr, tt.stderrPart)
			}
		})
	}

	t.Run("a background job does not hold the call", func(t *testing.T) {
		job := uniqueSleep(30)
		r, err := s.Run(ctx, Command{Line: "echo before; " + job + " & echo after"})
		if err != nil || string(r.Stdout) != "before\nafter\n" || r.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", r, err)
		}
		// Had the call waited for the job, the job would be over.
		ps, err := s.Processes(ctx, "^"+regexp.QuoteMeta(job)+"$")
		if err != nil || len(ps) != 1 {
			t.Fatalf("the background job after the call: %+v, %v; want it still running", ps, err)
		}
		if _, err := s.Run(ctx, Command{Line: fmt.Sprintf("kill %d", ps[0].PID)}); err != nil {
			t.Error(err)
		}
	})
	t.Run("stdin is empty", func(t *testing.T) {
		r, err := s.Run(ctx, Command{Line: "cat; echo done"})
		if err != nil || string(r.Stdout) != "done\n" {
			t.Fatalf("Run = %+v, %v", r, err)
		}
	})
	t.Run("output without a newline, and binary", func(t *testing.T) {
		r, err := s.Run(ctx, Command{Line: `printf 'a\000b'; printf 'e' >&2`})
		if err != nil || string(r.Stdout) != "a\x00b" || string(r.Stderr) != "e" {
			t.Fatalf("Run = %+v, %v", r, err)
		}
	})

	t.Run("bad env name", func(t *testing.T) {
		_, err := s.Run(ctx, Command{Line: "true", Env: map[string]string{"A-B": "x"}})
		if err == nil || !strings.Contains(err.Error(), `"A-B"`) {
			t.Fatalf("err = %v, want one naming the variable", err)
		}
	})
}

func TestSSHRunConcurrent(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	// More than OpenSSH's MaxSessions of 10 at once, on one connection.
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			r, err := s.Run(ctx, Command{Line: fmt.Sprintf("sleep 0.1; echo %d", i)})
			if err == nil && strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(i) {
				err = fmt.Errorf("call %d got %q", i, r.Stdout)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := countSSHDConnections(t, srv); got != 1 {
		t.Errorf("sshd accepted %d connections, want 1 shared by every call", got)
	}
}

// countSSHDConnections counts the connections sshd logged.
func countSSHDConnections(t *testing.T, srv *sshtest.Server) int {
	t.Helper()
	b, err := os.ReadFile(srv.Log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "Accepted publickey for ")
}

// waitExited polls Inspect until the process has exited.
func waitExited(t *testing.T, ctx context.Context, s Target, p Process) ProcessState {
	t.Helper()
	for {
		st, err := s.Inspect(ctx, p)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if st.Exited {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("process %d still alive: %v", p.PID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestSSHStartInspectStop(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	log := filepath.Join(t.TempDir(), "logs", "server.log")

	p, err := s.Start(ctx, Command{Line: "echo started; sleep 301 & exec sleep 302", Env: map[string]string{"X": "1"}}, log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	// A failed assertion must not leave the sleeps behind.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Stop(ctx, p, 0)
	})
	if p.PID <= 1 || p.PGID <= 1 || p.StartTime == 0 || p.Log != log {
		t.Fatalf("Start returned %+v", p)
	}
	if p.PGID == p.PID {
		t.Errorf("pgid %d is the command's pid; want the wrapper's", p.PGID)
	}
	st, err := s.Inspect(ctx, p)
	if err != nil || !st.Alive || st.Exited {
		t.Fatalf("Inspect = %+v, %v; want alive", st, err)
	}
	// The command's shell forks sleep 301 after Start has returned.
	var group []ProcessInfo
	localEventually(t, "both sleeps in the launch's group", func() bool {
		group, err = s.Processes(ctx, `^sleep 30[12]$`)
		if err != nil {
			t.Fatal(err)
		}
		inGroup := 0
		for _, pi := range group {
			if pi.PGID == p.PGID {
				inGroup++
			}
		}
		return inGroup == 2
	})
	// Matching the launch's command line finds the command, not its
	// wrapper or lockstep's own scripts.
	matched, err := s.Processes(ctx, "exec sleep 302")
	if err != nil {
		t.Fatal(err)
	}
	if len(matched) > 1 || (len(matched) == 1 && matched[0].PID != p.PID) {
		t.Errorf("Processes(the launch's command) = %+v, want at most the command itself (pid %d)", matched, p.PID)
	}
	// The session that started it must be its own: not in our sshd's.
	r, err := s.Run(ctx, Command{Line: fmt.Sprintf("ps -o sid= -p %d; ps -o sid= -p $$", p.PID)})
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(r.Stdout)); len(f) != 2 || f[0] == f[1] || f[0] != strconv.Itoa(p.PGID) {
		t.Errorf("sessions (launch, run) = %q, want the launch in its own session %d", r.Stdout, p.PGID)
	}

	if err := s.Stop(ctx, p, 2*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st = waitExited(t, ctx, s, p)
	if st.Alive || st.Signal != "SIGTERM" || st.ExitCode != -1 {
		t.Errorf("after Stop: %+v, want exited by SIGTERM", st)
	}
	left, err := s.Processes(ctx, `^sleep 30[12]$`)
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range left {
		if pi.PGID == p.PGID {
			t.Errorf("left in the group after Stop: %+v", pi)
		}
	}
	text, _, err := s.ReadAt(ctx, log, 0, 1000)
	if err != nil || string(text) != "started\n" {
		t.Errorf("log = %q, %v; want the command's output", text, err)
	}
	// Stopping again is harmless: the group is gone, nothing is signalled.
	if err := s.Stop(ctx, p, time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestSSHStopKillsAfterGrace(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	log := filepath.Join(t.TempDir(), "stubborn.log")
	p, err := s.Start(ctx, Command{Line: "trap '' TERM; echo ready; while :; do sleep 0.1; done"}, log)
	if err != nil {
		t.Fatal(err)
	}
	// A stopped member must not hold Stop up either.
	stopped, err := s.Start(ctx, Command{Line: "sleep 304"}, log+".2")
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, ctx, s, log, "ready")
	if r, err := s.Run(ctx, Command{Line: fmt.Sprintf("kill -STOP %d", stopped.PID)}); err != nil || r.ExitCode != 0 {
		t.Fatalf("kill -STOP: %+v, %v", r, err)
	}
	if err := s.Stop(ctx, stopped, 5*time.Second); err != nil {
		t.Fatalf("Stop of a stopped process: %v", err)
	}
	if st, err := s.Inspect(ctx, stopped); err != nil || st.Signal != "SIGTERM" {
		t.Errorf("stopped process after Stop: %+v, %v; want ended by TERM (after CONT)", st, err)
	}
	start := time.Now()
	if err := s.Stop(ctx, p, 300*time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Stop took %s", d)
	}
	st, err := s.Inspect(ctx, p)
	if err != nil || st.Alive || !st.Exited || st.Signal != "SIGKILL" {
		t.Fatalf("after Stop: %+v, %v; want exited by SIGKILL", st, err)
	}
}

func waitLog(t *testing.T, ctx context.Context, s Target, log, want string) {
	t.Helper()
	for {
		b, _, err := s.ReadAt(ctx, log, 0, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("log %s never showed %q (has %q)", log, want, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestSSHStartExitStatus(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	tests := []struct {
		line   string
		code   int
		signal string
		log    string
	}{
		{line: "echo failing; exit 7", code: 7, log: "failing\n"},
		{line: "no-such-command-lockstep", code: 127, log: "not found"},
		{line: "echo bye; kill -KILL $$", code: -1, signal: "SIGKILL", log: "bye"},
		{line: "true", code: 0},
	}
	for i, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			log := filepath.Join(dir, fmt.Sprintf("%d.log", i))
			p, err := s.Start(ctx, Command{Line: tt.line}, log)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			st := waitExited(t, ctx, s, p)
			if st.ExitCode != tt.code || st.Signal != tt.signal || st.Alive || st.Replaced {
				t.Errorf("state %+v, want exit %d signal %q", st, tt.code, tt.signal)
			}
			b, _, err := s.ReadAt(ctx, log, 0, 1000)
			if err != nil || !strings.Contains(string(b), tt.log) {
				t.Errorf("log %q, %v; want %q", b, err, tt.log)
			}
		})
	}

	t.Run("log cannot be opened", func(t *testing.T) {
		_, err := s.Start(ctx, Command{Line: "true"}, dir) // a directory
		if err == nil || !strings.Contains(err.Error(), "cannot open the log") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("relative log", func(t *testing.T) {
		name := fmt.Sprintf("lockstep-ssh-test-%d.log", time.Now().UnixNano())
		p, err := s.Start(ctx, Command{Line: "echo rel", Dir: dir}, name)
		if err != nil {
			t.Fatal(err)
		}
		home, _ := os.UserHomeDir()
		want := filepath.Join(home, name)
		defer os.Remove(want)
		if p.Log != want {
			t.Errorf("Log %q, want %q (the remote home, not Dir)", p.Log, want)
		}
		waitExited(t, ctx, s, p)
		if b, _, err := s.ReadAt(ctx, p.Log, 0, 100); err != nil || string(b) != "rel\n" {
			t.Errorf("log %q, %v", b, err)
		}
	})
	t.Run("replaced", func(t *testing.T) {
		p, err := s.Start(ctx, Command{Line: "sleep 300"}, filepath.Join(dir, "r.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop(ctx, p, time.Second)
		other := p
		other.StartTime--
		st, err := s.Inspect(ctx, other)
		if err != nil || !st.Replaced || st.Alive {
			t.Errorf("Inspect with another start time = %+v, %v; want Replaced", st, err)
		}
	})
}

func TestSSHLaunchSurvivesClose(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	p := mustStart(t, ctx, s, "sleep 300")
	s.Close()
	if _, err := s.Run(ctx, Command{Line: "true"}); !errors.Is(err, errClosed) {
		t.Errorf("Run after Close: %v, want errClosed", err)
	}

	again := testSSH(t, srv)
	st, err := again.Inspect(ctx, p)
	if err != nil || !st.Alive {
		t.Fatalf("after the connection closed: %+v, %v; want alive", st, err)
	}
	if err := again.Stop(ctx, p, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestSSHFiles(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	t.Run("dd", func(t *testing.T) { testSSHFiles(t, testSSH(t, srv)) })
	t.Run("tail and head", func(t *testing.T) {
		s := testSSH(t, srv)
		s.noByteDD.Store(true)
		testSSHFiles(t, s)
	})
	// A dd that does not count bytes (BusyBox's before 1.35): the
	// reads fall back to tail and head, and say so no more.
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"dd: invalid input flag: 'count_bytes'\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "dd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	old := sshtest.StartSSHD(t, "SetEnv PATH="+bin+":/usr/bin:/bin")
	t.Run("old dd", func(t *testing.T) {
		s := testSSH(t, old)
		testSSHFiles(t, s)
		if !s.noByteDD.Load() {
			t.Errorf("the reads went on without knowing the host's dd refuses count_bytes")
		}
	})
}

func testSSHFiles(t *testing.T, s *SSH) {
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")

	info, err := s.Stat(ctx, path)
	if err != nil || info.Exists {
		t.Fatalf("Stat of a missing file = %+v, %v", info, err)
	}
	b, info, err := s.ReadAt(ctx, path, 0, 10)
	if err != nil || info.Exists || b != nil {
		t.Fatalf("ReadAt of a missing file = %q, %+v, %v", b, info, err)
	}
	if name, err := s.MoveAside(ctx, path); err != nil || name != "" {
		t.Fatalf("MoveAside of a missing file = %q, %v", name, err)
	}

	if err := os.WriteFile(path, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err = s.Stat(ctx, path)
	if err != nil || !info.Exists || info.Size != 18 || info.ID == "" {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	local, _ := os.Stat(path)
	if !info.ModTime.Equal(local.ModTime()) {
		t.Errorf("ModTime %v, want %v", info.ModTime, local.ModTime())
	}
	for _, tt := range []struct {
		off  int64
		max  int
		want string
	}{{0, 100, "line one\nline two\n"}, {5, 3, "one"}, {9, 100, "line two\n"}, {18, 10, ""}, {100, 10, ""}} {
		b, got, err := s.ReadAt(ctx, path, tt.off, tt.max)
		if err != nil || string(b) != tt.want || got != info {
			t.Errorf("ReadAt(%d, %d) = %q, %+v, %v; want %q, %+v", tt.off, tt.max, b, got, err, tt.want, info)
		}
	}

	// Truncation: the size falls under the reader's offset.
	if err := os.WriteFile(path, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, trunc, err := s.ReadAt(ctx, path, 18, 100)
	if err != nil || len(b) != 0 || trunc.Size != 4 || trunc.ID != info.ID {
		t.Errorf("after truncation: %q, %+v, %v; want no bytes, size 4, same file", b, trunc, err)
	}

	// Rotation: the path now names another file.
	aside, err := s.MoveAside(ctx, path)
	if err != nil || !strings.HasPrefix(aside, path+".prev-") {
		t.Fatalf("MoveAside = %q, %v", aside, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old file is still at %s", path)
	}
	if err := os.WriteFile(path, []byte("rotated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, rot, err := s.ReadAt(ctx, path, 0, 100)
	if err != nil || string(b) != "rotated\n" || rot.ID == info.ID {
		t.Errorf("after rotation: %q, %+v, %v; want the new file with a new ID (old %s)", b, rot, err, info.ID)
	}
	aside2, err := s.MoveAside(ctx, path)
	if err != nil || aside2 == aside || aside2 == "" {
		t.Errorf("second MoveAside = %q, %v; want a fresh name beside %q", aside2, err, aside)
	}

	// Names the shell would otherwise interpret.
	odd := filepath.Join(dir, "it's $HOME; `x`")
	if err := os.WriteFile(odd, []byte("odd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.ReadAt(ctx, odd, 0, 10); err != nil || string(b) != "odd" {
		t.Errorf("ReadAt(%q) = %q, %v", odd, b, err)
	}
	// A binary tail, bytes kept as they are.
	bin := filepath.Join(dir, "bin")
	data := []byte{0, 1, 2, '\n', 255, 0}
	if err := os.WriteFile(bin, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _, err := s.ReadAt(ctx, bin, 1, 10); err != nil || string(b) != string(data[1:]) {
		t.Errorf("binary ReadAt = %v, %v", b, err)
	}
}

func TestSSHListenersAndDial(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	defer web.Close()
	port := web.Listener.Addr().(*net.TCPAddr).Port

	ls, err := s.Listeners(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].PID != os.Getpid() || ls[0].Address != web.Listener.Addr().String() || ls[0].Command == "" {
		t.Errorf("Listeners(%d) = %+v, want this test process (%d) on %s", port, ls, os.Getpid(), web.Listener.Addr())
	}
	if ls, err := s.Listeners(ctx, freeTCPPort(t)); err != nil || len(ls) != 0 {
		t.Errorf("Listeners on a closed port = %+v, %v", ls, err)
	}
	// Two sockets on one port (IPv4 and IPv6): the script looks for both
	// inodes in one pass, and lists the one owner once per socket.
	if v6, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback, skipping the two-socket case: %v", err)
	} else {
		defer v6.Close()
		port6 := v6.Addr().(*net.TCPAddr).Port
		v4, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port6))
		if err != nil {
			t.Fatal(err)
		}
		defer v4.Close()
		ls, err := s.Listeners(ctx, port6)
		want := []string{v4.Addr().String(), v6.Addr().String()}
		if err != nil || len(ls) != 2 || ls[0].PID != os.Getpid() || ls[1].PID != os.Getpid() ||
			ls[0].Address != want[0] || ls[1].Address != want[1] || ls[0].PGID == 0 {
			t.Errorf("Listeners(%d) = %+v, %v; want this process on %v", port6, ls, err, want)
		}
	}

	client := &http.Client{Transport: &http.Transport{DialContext: s.Dial}}
	resp, err := client.Get(web.URL + "/through-ssh")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello from /through-ssh" {
		t.Errorf("body %q", body)
	}
	if _, err := s.Dial(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))); err == nil || errors.Is(err, ErrDisconnected) {
		t.Errorf("Dial to a closed port = %v, want a refusal that is not a disconnection", err)
	}
}

func freeTCPPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestSSHHostKeys(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	want := ssh.FingerprintSHA256(srv.HostKey)
	marker := filepath.Join(t.TempDir(), "ran")

	otherKey, err := sshtest.WriteKey(filepath.Join(t.TempDir(), "other"), "")
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(changed, []byte(sshtest.KnownHostsLine(srv.Host, srv.Port, otherKey)), 0o600)
	empty := filepath.Join(t.TempDir(), "empty_known_hosts")
	os.WriteFile(empty, nil, 0o600)

	tests := []struct {
		name    string
		known   []string
		changed bool
		parts   []string
	}{
		{name: "unknown host", known: []string{empty}, parts: []string{want, "is unknown", fmt.Sprintf("ssh-keyscan -p %d 127.0.0.1 >> %s", srv.Port, empty), "nothing was sent"}},
		{name: "no known_hosts file", known: []string{filepath.Join(t.TempDir(), "absent")}, parts: []string{want, "ssh-keyscan -p"}},
		{name: "changed key", known: []string{changed}, changed: true, parts: []string{want, "HOST KEY CHANGED", changed + ":1", "ssh-keygen -f " + changed + " -R '[127.0.0.1]:" + strconv.Itoa(srv.Port) + "' && ssh-keyscan -p " + strconv.Itoa(srv.Port) + " 127.0.0.1 >> " + changed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSSH(t, srv, func(c *SSHConfig) { c.KnownHosts = tt.known })
			_, err := s.Run(ctx, Command{Line: "touch " + shellQuote(marker)})
			var hk *HostKeyError
			if !errors.As(err, &hk) || hk.Changed != tt.changed || hk.Fingerprint != want {
				t.Fatalf("err = %v, want a HostKeyError (changed %v) with %s", err, tt.changed, want)
			}
			for _, p := range tt.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q lacks %q", err, p)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran despite the host key")
			}
		})
	}
	t.Run("insecure", func(t *testing.T) {
		s := testSSH(t, srv, func(c *SSHConfig) { c.KnownHosts = []string{empty}; c.InsecureIgnoreHostKey = true })
		if r, err := s.Run(ctx, Command{Line: "true"}); err != nil || r.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", r, err)
		}
	})
	t.Run("the server's other key type is known", func(t *testing.T) {
		// sshd holds ed25519 and ECDSA keys, x/crypto prefers ECDSA: only
		// asking for the type known_hosts holds makes either work
		// (golang/go#29286).
		for _, key := range []ssh.PublicKey{srv.HostKey, srv.OtherHostKey} {
			known := filepath.Join(t.TempDir(), "known_hosts")
			os.WriteFile(known, []byte(sshtest.KnownHostsLine(srv.Host, srv.Port, key)), 0o600)
			s := testSSH(t, srv, func(c *SSHConfig) { c.KnownHosts = []string{known} })
			if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
				t.Errorf("with only the %s key known: %v", key.Type(), err)
			}
		}
	})
}

func TestSSHAuth(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()

	t.Run("wrong key: the error lists what was tried", func(t *testing.T) {
		wrong := filepath.Join(dir, "wrong")
		pub, err := sshtest.WriteKey(wrong, "")
		if err != nil {
			t.Fatal(err)
		}
		locked := filepath.Join(dir, "locked")
		if _, err := sshtest.WriteKey(locked, "secret"); err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(dir, "missing")
		s := testSSH(t, srv, func(c *SSHConfig) { c.IdentityFiles = []string{wrong, locked, missing} })
		_, err = s.Run(ctx, Command{Line: "true"})
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want an AuthError", err)
		}
		for _, part := range []string{
			"agent: not running",
			wrong + " (ssh-ed25519 " + ssh.FingerprintSHA256(pub) + ")",
			locked + " (encrypted; set passphrase_env",
			"not found: " + missing,
			srv.User + "@127.0.0.1:" + strconv.Itoa(srv.Port),
		} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q lacks %q", err, part)
			}
		}
		if errors.Is(err, ErrDisconnected) {
			t.Error("an auth failure must not read as a dropped connection")
		}
	})

	t.Run("ssh-agent", func(t *testing.T) {
		missing := filepath.Join(dir, "no-such-key")
		s := testSSH(t, srv, func(c *SSHConfig) { c.IdentityFiles = []string{missing} })
		t.Setenv("SSH_AUTH_SOCK", sshtest.StartAgent(t, srv.UserKey))
		if r, err := s.Run(ctx, Command{Line: "echo via agent"}); err != nil || string(r.Stdout) != "via agent\n" {
			t.Fatalf("Run = %+v, %v", r, err)
		}

		// Every key refused: the error names each by its fingerprint.
		var refused []ssh.PublicKey
		var keys []string
		for _, name := range []string{"agent-other", "agent-third"} {
			f := filepath.Join(dir, name)
			pub, err := sshtest.WriteKey(f, "")
			if err != nil {
				t.Fatal(err)
			}
			refused, keys = append(refused, pub), append(keys, f)
		}
		s = testSSH(t, srv, func(c *SSHConfig) { c.IdentityFiles = []string{missing} })
		sock := sshtest.StartAgent(t, keys...)
		t.Setenv("SSH_AUTH_SOCK", sock)
		_, err := s.Run(ctx, Command{Line: "true"})
		want := fmt.Sprintf("agent (%s): 2 keys: ssh-ed25519 %s, ssh-ed25519 %s", sock, ssh.FingerprintSHA256(refused[0]), ssh.FingerprintSHA256(refused[1]))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to list the agent's keys: %s", err, want)
		}
	})

	t.Run("passphrase from the environment", func(t *testing.T) {
		key := filepath.Join(dir, "protected")
		pub, err := sshtest.WriteKey(key, "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.AuthorizeKey(pub); err != nil {
			t.Fatal(err)
		}
		t.Setenv("LOCKSTEP_TEST_PASSPHRASE", "correct horse")
		s := testSSH(t, srv, func(c *SSHConfig) { c.IdentityFiles = []string{key}; c.PassphraseEnv = "LOCKSTEP_TEST_PASSPHRASE" })
		if r, err := s.Run(ctx, Command{Line: "echo in"}); err != nil || string(r.Stdout) != "in\n" {
			t.Fatalf("Run = %+v, %v", r, err)
		}

		t.Setenv("LOCKSTEP_TEST_PASSPHRASE", "wrong")
		s = testSSH(t, srv, func(c *SSHConfig) { c.IdentityFiles = []string{key}; c.PassphraseEnv = "LOCKSTEP_TEST_PASSPHRASE" })
		_, err = s.Run(ctx, Command{Line: "true"})
		if err == nil || !strings.Contains(err.Error(), "the passphrase in $LOCKSTEP_TEST_PASSPHRASE does not decrypt it") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSSHProxyJump(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	hop := fmt.Sprintf("%s@%s:%d", srv.User, srv.Host, srv.Port)
	for _, jump := range []string{hop, hop + "," + hop} {
		t.Run(jump, func(t *testing.T) {
			before := countSSHDConnections(t, srv)
			s := testSSH(t, srv, func(c *SSHConfig) { c.ProxyJump = jump })
			r, err := s.Run(ctx, Command{Line: `echo "$SSH_CLIENT"`})
			if err != nil {
				t.Fatal(err)
			}
			// Through a jump host, the final sshd sees the connection
			// come from the hop's loopback, not from us directly.
			if !strings.HasPrefix(string(r.Stdout), "127.0.0.1 ") {
				t.Errorf("SSH_CLIENT = %q", r.Stdout)
			}
			hops := strings.Count(jump, ",") + 1
			if got := countSSHDConnections(t, srv) - before; got != hops+1 {
				t.Errorf("sshd saw %d connections, want %d (one per hop and the target)", got, hops+1)
			}
		})
	}
	t.Run("a hop that refuses", func(t *testing.T) {
		s := testSSH(t, srv, func(c *SSHConfig) { c.ProxyJump = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)) })
		_, err := s.Run(ctx, Command{Line: "true"})
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("err = %v", err)
		}
	})
}

// proxied is a target reaching srv through a proxy the test can break.
func proxied(t *testing.T, srv *sshtest.Server, edit ...func(*SSHConfig)) (*SSH, *sshtest.Proxy) {
	t.Helper()
	p := sshtest.StartProxy(t, srv.Addr())
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, []byte(sshtest.KnownHostsLine(srv.Host, p.Port(), srv.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testSSH(t, srv, append([]func(*SSHConfig){func(c *SSHConfig) { c.Port = p.Port(); c.KnownHosts = []string{known} }}, edit...)...)
	return s, p
}

func TestSSHReconnectAfterCut(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	s, proxy := proxied(t, srv)
	p := mustStart(t, ctx, s, "sleep 300")
	defer s.Stop(ctx, p, time.Second)

	// Two calls in flight: a command in its own session, and one of
	// lockstep's scripts on a worker.
	errc := make(chan error, 2)
	run, script := uniqueSleep(30), uniqueSleep(31)
	go func() {
		_, err := s.Run(ctx, Command{Line: run})
		errc <- err
	}()
	go func() {
		_, err := s.script(ctx, "sleep", script)
		errc <- err
	}()
	waitProcesses(t, ctx, s, "^("+regexp.QuoteMeta(run)+"|"+regexp.QuoteMeta(script)+")$", 2)
	proxy.Sever()
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrDisconnected) {
				t.Fatalf("call in flight: %v, want ErrDisconnected", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a call in flight did not fail after the connection was cut")
		}
	}

	// The next call reconnects, and the process is still there.
	st, err := s.Inspect(ctx, p)
	if err != nil || !st.Alive {
		t.Fatalf("Inspect after reconnect = %+v, %v", st, err)
	}
	if n := proxy.Accepted(); n != 2 {
		t.Errorf("proxy accepted %d connections, want 2", n)
	}
}

func TestSSHInspectDuringOutageIsNotExited(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	s, proxy := proxied(t, srv)
	p := mustStart(t, ctx, s, "sleep 300")
	defer testSSH(t, srv).Stop(ctx, p, time.Second)

	// The host vanishes: the connection is cut and no new one answers.
	proxy.Block()
	proxy.Sever()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := s.Inspect(short, p)
	if err == nil || st.Exited || st.Alive {
		t.Fatalf("Inspect with the host unreachable = %+v, %v; want an error and no verdict", st, err)
	}
	if !errors.Is(err, ErrDisconnected) {
		t.Errorf("err = %v, want ErrDisconnected", err)
	}
}

func TestSSHKeepaliveNoticesSilentDrop(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	s, proxy := proxied(t, srv, func(c *SSHConfig) {
		c.KeepaliveInterval = 200 * time.Millisecond
		c.KeepaliveMax = 3
	})
	if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	call := uniqueSleep(50)
	go func() {
		_, err := s.Run(ctx, Command{Line: call})
		errc <- err
	}()
	waitProcesses(t, ctx, s, "^"+regexp.QuoteMeta(call)+"$", 1)
	proxy.Freeze()
	frozen := time.Now()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), "keepalive") {
			t.Fatalf("err = %v, want ErrDisconnected naming the keepalives", err)
		}
		t.Logf("noticed after %s: %v", time.Since(frozen).Round(time.Millisecond), err)
	case <-time.After(15 * time.Second):
		t.Fatal("a silently dropped connection was not noticed within 15s")
	}
	if r, err := s.Run(ctx, Command{Line: "echo back"}); err != nil || string(r.Stdout) != "back\n" {
		t.Fatalf("after the drop: %+v, %v; want a fresh connection", r, err)
	}
}

func BenchmarkSSH(b *testing.B) {
	srv := sshtest.StartSSHD(b)
	s := testSSH(b, srv)
	ctx := context.Background()
	dir := b.TempDir()
	log := filepath.Join(dir, "bench.log")
	if err := os.WriteFile(log, []byte(strings.Repeat("x", 1<<20)), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := s.Start(ctx, Command{Line: "sleep 300"}, filepath.Join(dir, "p.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Stop(ctx, p, time.Second) })

	b.Run("RoundTrip", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A session of true and nothing else: no mark, no look.
	b.Run("Session", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.exec(ctx, "bench", "true", io.Discard, io.Discard, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Members", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Members(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What a run step's look for what its command left costs when it
	// left nothing, the common case.
	b.Run("MembersLeftNothing", func(b *testing.B) {
		r, err := s.Run(ctx, Command{Line: "true"})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if ms, err := s.Members(ctx, r.Owned()); err != nil || len(ms) > 0 {
				b.Fatal(ms, err)
			}
		}
	})
	b.Run("WorkerRoundTrip", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.script(ctx, "noop", "true"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Inspect", func(b *testing.B) {
		for b.Loop() {
			if st, err := s.Inspect(ctx, p); err != nil || !st.Alive {
				b.Fatal(st, err)
			}
		}
	})
	b.Run("ReadAt", func(b *testing.B) {
		for b.Loop() {
			if data, _, err := s.ReadAt(ctx, log, 4096, 4096); err != nil || len(data) != 4096 {
				b.Fatal(len(data), err)
			}
		}
	})
	b.Run("Stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Stat(ctx, log); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Processes", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Processes(ctx, "sleep"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Listeners", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		for b.Loop() {
			if ls, err := s.Listeners(ctx, port); err != nil || len(ls) != 1 || ls[0].PID != os.Getpid() {
				b.Fatal(ls, err)
			}
		}
	})
	// bash reads ~/.bashrc for sshd only at shell level 1: with SHLVL=1
	// set by sshd it is at 2, so these are a bare session's floor, login
	// shell startup aside.
	bare := testSSH(b, sshtest.StartSSHD(b, "SetEnv SHLVL=1"))
	b.Run("RoundTripNoBashrc", func(b *testing.B) {
		for b.Loop() {
			if _, err := bare.Run(ctx, Command{Line: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A session of true and nothing else (no mark, no look), and a run
	// step of true as the runner pays it: Run, then the look for what it
	// left.
	b.Run("SessionNoBashrc", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := bare.exec(ctx, "bench", "true", io.Discard, io.Discard, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RunStepNoBashrc", func(b *testing.B) {
		for b.Loop() {
			r, err := bare.Run(ctx, Command{Line: "true"})
			if err != nil {
				b.Fatal(err)
			}
			if ms, err := Leftovers(ctx, bare, r); err != nil || len(ms) > 0 {
				b.Fatal(ms, err)
			}
		}
	})
	b.Run("NewConnection", func(b *testing.B) {
		for b.Loop() {
			fresh := NewSSH("bench", s.cfg)
			if _, err := fresh.Run(ctx, Command{Line: "true"}); err != nil {
				b.Fatal(err)
			}
			fresh.Close()
		}
	})
}

func TestSSHRunCancel(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	// Cancelled once the command has printed (a file it touches says so),
	// not at a fixed time: on a loaded machine the session may take
	// seconds to start.
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	printed := filepath.Join(t.TempDir(), "printed")
	go func() {
		defer cancel()
		for {
			if _, err := os.Stat(printed); err == nil {
				return
			}
			select {
			case <-short.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	cmd := uniqueSleep(41)
	r, err := s.Run(short, Command{Line: "echo partial; touch " + shellQuote(printed) + "; " + cmd})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrDisconnected) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	if string(r.Stdout) != "partial\n" {
		t.Errorf("stdout %q, want what was printed before the cancellation", r.Stdout)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("Run returned after %s: the command's own time, not its 3s deadline", d)
	}
	// The command does not outlive the call.
	waitNoProcesses(t, ctx, s, "^"+regexp.QuoteMeta(cmd)+"$", "still running after the call was cancelled")
}

// uniqueSleep is a sleep of about secs seconds whose command line no
// other test, nor another run of this one on the machine, has.
func uniqueSleep(secs int) string {
	return fmt.Sprintf("sleep %d.%03d%06d", secs, os.Getpid()%1000, time.Now().UnixNano()%1000000)
}

// waitProcesses waits until n processes on tg match match: a call in
// flight has got as far as its command.
func waitProcesses(t *testing.T, ctx context.Context, tg Target, match string, n int) {
	t.Helper()
	var ps []ProcessInfo
	err := pollUntil(ctx, 20*time.Millisecond, func() (bool, error) {
		var err error
		ps, err = tg.Processes(ctx, match)
		return len(ps) == n, err
	})
	if err != nil {
		t.Fatalf("waiting for %d processes matching %q (have %+v): %v", n, match, ps, err)
	}
}

// What a run's command leaves running on the host (setsid, a double
// fork, an emptied environment) is found by the mark Run returns, and
// Stop ends it; another run's leftover is not among them.
func TestSSHRunLeftovers(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	res, err := s.Run(ctx, Command{Line: `setsid sleep 42.1 >/dev/null 2>&1 & echo $!
( sleep 42.1 >/dev/null 2>&1 & echo $! )
( setsid env -i sleep 42.1 >/dev/null 2>&1 & echo $! )`})
	if err != nil || res.ExitCode != 0 || res.Mark == "" {
		t.Fatalf("run: %v, exit %d, mark %q, stderr %q", err, res.ExitCode, res.Mark, res.Stderr)
	}
	other, err := s.Run(ctx, Command{Line: "setsid sleep 42.2 >/dev/null 2>&1 & echo $!"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background(), Process{Mark: other.Mark}, 0) })
	if res.LeftNothing {
		t.Errorf("the run's own look says it left nothing; it left 3 sleeps")
	}
	ms, err := Leftovers(ctx, s, res)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range ms {
		got[strconv.Itoa(m.PID)] = true
	}
	left := strings.Fields(string(res.Stdout))
	if len(left) != 3 || len(ms) != 3 {
		t.Fatalf("stdout %q, members %+v: want the same 3 pids", res.Stdout, ms)
	}
	for _, k := range left {
		if !got[k] {
			t.Errorf("pid %s, left by the run, is not among its members %+v", k, ms)
		}
	}
	if err := s.Stop(ctx, Process{Mark: res.Mark}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNoProcesses(t, ctx, s, `^sleep 42\.1$`, "left after Stop")
	if ps, err := s.Processes(ctx, `^sleep 42\.2$`); err != nil || len(ps) != 1 {
		t.Errorf("another run's leftover after Stop: %+v, %v; want it still running", ps, err)
	}
}

// A Run's shell looks for what its command left as it exits: nothing left
// is said with no further call, whatever the command did to its shell; a
// process left is never said to be nothing, and the look's line is in
// neither stream.
func TestSSHRunLooksAsItEnds(t *testing.T) {
	// No ~/.bashrc (SHLVL=1: see RoundTripNoBashrc): the streams are
	// compared whole.
	srv := sshtest.StartSSHD(t, "SetEnv SHLVL=1")
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	redirected := filepath.Join(t.TempDir(), "stderr")
	for _, tc := range []struct {
		name, line     string
		exit           int
		stdout, stderr string
		nothing        bool // the run's own look can say so
		left           int  // what Members finds
	}{
		{name: "true", line: "true", nothing: true},
		{name: "exit", line: "printf out; printf half >&2; exit 3", exit: 3, stdout: "out", stderr: "half", nothing: true},
		{name: "shell options", line: "set -euf; IFS=:; x=$(echo 1); echo $x", stdout: "1\n", nothing: true},
		{name: "stderr to stdout", line: "exec 2>&1; echo out; echo err >&2", stdout: "out\nerr\n", nothing: true},
		// The look's line would go to the user's file: it is not written.
		{name: "stderr to a file", line: "exec 2>" + redirected + "; echo err >&2"},
		{name: "background", line: "sleep 42.5 >/dev/null 2>&1 &", left: 1},
		{name: "double fork, empty env", line: "( setsid env -i sleep 42.5 >/dev/null 2>&1 & )", left: 1},
		// A background job daemonizing as the command ends, while the
		// look reads /proc.
		{name: "daemonizing as it ends", line: "sh -c 'setsid sleep 42.5 >/dev/null 2>&1 &' >/dev/null 2>&1 &", left: 1},
		{name: "no PATH", line: "sleep 42.5 >/dev/null 2>&1 & PATH=/nonexistent", left: 1},
		{name: "own trap", line: "trap 'echo bye' EXIT", stdout: "bye\n"},
		{name: "exec", line: "exec true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The look could give up ("unknown", and Members looks)
			// when processes of others ended under its rounds, which a
			// busy host makes; it now greps all of /proc itself then
			// (TestSSHRunLooksUnderChurn), but a few tries cost nothing.
			for try := 0; ; try++ {
				res, err := s.Run(ctx, Command{Line: tc.line})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Stop(context.Background(), res.Owned(), 0) })
				if res.ExitCode != tc.exit || string(res.Stdout) != tc.stdout || string(res.Stderr) != tc.stderr {
					t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", res.ExitCode, res.Stdout, res.Stderr, tc.exit, tc.stdout, tc.stderr)
				}
				if res.LeftNothing && !tc.nothing {
					t.Errorf("the look says the command left nothing; want it to leave it to Members")
				}
				ms, err := Leftovers(ctx, s, res)
				if err != nil || len(ms) != tc.left {
					t.Errorf("leftovers %+v, %v; want %d", ms, err, tc.left)
				}
				if res.LeftNothing == tc.nothing || t.Failed() {
					break
				}
				if try == 20 {
					t.Fatalf("the look never said the command left nothing in %d tries", try)
				}
			}
		})
	}
	if b, err := os.ReadFile(redirected); err != nil || string(b) != "err\n" {
		t.Errorf("the command's own stderr file holds %q, %v; want only its line", b, err)
	}
}

// The look's pid window, wrapped past pid_max, still holds the processes
// whose pids are below the shell's; and past a whole lap of forks it says
// nothing rather than trust the window.
func TestSSHRunLookWindow(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	tok := token()
	// The trap as the look sets it, with another shell pid or fork count.
	retrap := `read -r _ _ _ a _ </proc/loadavg
while read -r k p; do [ "$k" = processes ] && break; done </proc/stat
m=$(cat /proc/sys/kernel/pid_max)
`
	for _, tc := range []struct {
		name, line, trap, want string
	}{
		{"wrapped, left one", "sleep 42.9 >/dev/null 2>&1 &", `trap "lockstep_left \$? $((m - 1)) $p ${a#*/}" EXIT`, "some"},
		{"wrapped, left none", "true", `trap "lockstep_left \$? $((m - 1)) $p ${a#*/}" EXIT`, "none"},
		{"a lap of forks", "true", `trap "lockstep_left \$? $$ $((p - m)) ${a#*/}" EXIT`, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark, err := newMark()
			if err != nil {
				t.Fatal(err)
			}
			lim, _ := markLimit(mark)
			t.Cleanup(func() { s.Stop(context.Background(), Process{Mark: mark}, 0) })
			script := "export " + markEnv(mark) + "=1\n" + fmt.Sprintf(runMarkLine, lim) + fmt.Sprintf(runLookScript, tok, lim, mark) +
				tc.line + "\n" + retrap + tc.trap + "\n"
			// As above, "unknown" is what a busy host can make of any.
			for try := 0; ; try++ {
				var out, errb bytes.Buffer
				if _, _, err := s.exec(ctx, "look", script, &out, &errb, nil); err != nil {
					t.Fatal(err)
				}
				_, said := cutVerdict(errb.Bytes(), tok)
				if said == tc.want {
					break
				}
				if said != "unknown" || try == 20 {
					t.Fatalf("the look said %q (stderr %q), want %q", said, errb.String(), tc.want)
				}
			}
		})
	}
}

// A run cut short on the host ends what left its session too (setsid).
func TestSSHRunCancelStopsTree(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "started")
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(short, Command{Line: "setsid sleep 42.3 >/dev/null 2>&1 & touch " + flag + "; sleep 42.4"})
		done <- err
	}()
	for {
		if _, err := os.Stat(flag); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended before it was cancelled: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancel", err)
	}
	// Run returns once it is gone: no waiting here.
	if ps, err := s.Processes(ctx, `^sleep 42\.[34]$`); err != nil || len(ps) > 0 {
		t.Errorf("after the cancelled run: %+v, %v; want nothing left", ps, err)
	}
}

// waitNoProcesses waits until no process on tg matches match, failing
// with what and the processes left when ctx ends first.
func waitNoProcesses(t *testing.T, ctx context.Context, tg Target, match, what string) {
	t.Helper()
	for {
		left, err := tg.Processes(ctx, match)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %+v", what, left)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A process listing leaves lockstep's own processes out: the worker, the
// subshell running the listing script and what that script runs.
func TestSSHProcessesLeavesItselfOut(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	own, err := s.Processes(ctx, `lockstep-call|^cat /proc|^head -v -c 65536|/proc/self/stat`)
	if err != nil {
		t.Fatal(err)
	}
	if len(own) > 0 {
		t.Errorf("Processes listed lockstep's own: %+v", own)
	}
	// Yet it lists the host's processes: this test's own sshd.
	all, err := s.Processes(ctx, `sshd`)
	if err != nil || len(all) == 0 {
		t.Fatalf("Processes(sshd) = %+v, %v", all, err)
	}
}

func TestSSHWorkers(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("x"), 0o644)

	sessions := func() int {
		b, _ := os.ReadFile(srv.Log)
		return strings.Count(string(b), "Starting session")
	}
	// Many calls, some at once: they share a few long-lived sessions
	// instead of paying a login shell each.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.Stat(ctx, path); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := sessions(); n > maxWorkers {
		t.Errorf("30 calls opened %d sessions, want at most %d", n, maxWorkers)
	}

	// A call cancelled mid-script ends its worker's processes, and the
	// next call gets a fresh worker.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	cancelled := uniqueSleep(42)
	if _, err := s.script(short, "sleep", cancelled); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled script: %v", err)
	}
	if info, err := s.Stat(ctx, path); err != nil || info.Size != 1 {
		t.Fatalf("after a cancelled call: %+v, %v", info, err)
	}
	waitNoProcesses(t, ctx, s, "^"+regexp.QuoteMeta(cancelled)+"$", "the cancelled call's process is still running")

	// A worker that died while idle is replaced, not handed out.
	var pids []string
	for range len(s.conn.workers.idle) {
		w := <-s.conn.workers.idle
		pids = append(pids, strconv.Itoa(w.pid))
		s.conn.workers.idle <- w
	}
	if len(pids) == 0 {
		t.Fatal("no idle worker")
	}
	if r, err := s.Run(ctx, Command{Line: "kill " + strings.Join(pids, " ")}); err != nil || r.ExitCode != 0 {
		t.Fatalf("kill the workers: %+v, %v", r, err)
	}
	gone := func() (bool, error) {
		r, err := s.Run(ctx, Command{Line: "for p in " + strings.Join(pids, " ") + "; do kill -0 $p 2>/dev/null && exit 1; done; exit 0"})
		return err == nil && r.ExitCode == 0, err
	}
	if err := pollUntil(ctx, 20*time.Millisecond, gone); err != nil {
		t.Fatalf("the killed workers %v are still there: %v", pids, err)
	}
	if info, err := s.Stat(ctx, path); err != nil || info.Size != 1 {
		t.Fatalf("after the workers were killed: %+v, %v", info, err)
	}

	// Output a script prints without a final newline, or binary, is kept
	// exactly.
	out, err := s.script(ctx, "printf", `printf 'a\nb'; printf 'err' >&2`)
	if err != nil || string(out) != "a\nb" {
		t.Errorf("script output %q, %v", out, err)
	}
}

func TestSSHStopLeftoverGroup(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	// The command exits at once, leaving a child in its process group.
	p := mustStart(t, ctx, s, "sleep 303 & exit 5")
	if st := waitExited(t, ctx, s, p); st.ExitCode != 5 {
		t.Errorf("exit %+v, want 5", st)
	}
	inGroup := func() int {
		ps, err := s.Processes(ctx, `^sleep 303$`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, pi := range ps {
			if pi.PGID == p.PGID {
				n++
			}
		}
		return n
	}
	if n := inGroup(); n != 1 {
		t.Fatalf("%d leftover processes in group %d, want 1", n, p.PGID)
	}
	if err := s.Stop(ctx, p, time.Second); err != nil {
		t.Fatal(err)
	}
	if n := inGroup(); n != 0 {
		t.Errorf("%d processes left in group %d after Stop", n, p.PGID)
	}
}

// TestSSHStopWrapperByStartTime is Stop called while the launch's wrapper
// exits: it still runs but its command line is already empty. A live group
// leader that started no later than the command is the wrapper, whatever
// its command line says; one that started later is a newcomer with the
// wrapper's pid, and its group is left alone.
func TestSSHStopWrapperByStartTime(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	// A group led by a process whose command line does not say
	// lockstep-launch, with a child; the host is this machine.
	leader := exec.Command("/bin/sh", "-c", "sleep 306 & exec sleep 307")
	leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	g := leader.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-g, syscall.SIGKILL); _ = leader.Wait() })
	st, err := readLocalStat(g)
	if err != nil {
		t.Fatal(err)
	}
	// The command: exited and reaped, its pid gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	members := func() int {
		n, err := localGroupMembers(g)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	localEventually(t, "the leader and its child", func() bool { return members() == 2 })

	newcomer := Process{PID: gone.Process.Pid, PGID: g, StartTime: st.StartTime - 1}
	if err := s.Stop(ctx, newcomer, time.Second); err != nil {
		t.Fatal(err)
	}
	if n := members(); n != 2 {
		t.Errorf("a group led by a process started after the command: %d members left of 2, want it untouched", n)
	}

	wrapper := Process{PID: gone.Process.Pid, PGID: g, StartTime: st.StartTime}
	if err := s.Stop(ctx, wrapper, time.Second); err != nil {
		t.Fatal(err)
	}
	if n := members(); n != 0 {
		t.Errorf("%d processes left in group %d after Stop", n, g)
	}
}

func TestSSHConnectTimeout(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	s, proxy := proxied(t, srv, func(c *SSHConfig) { c.ConnectTimeout = 2 * time.Second })
	proxy.Block() // TCP connects, then nothing answers
	start := time.Now()
	_, err := s.Stat(ctx, "/")
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s (connect_timeout)") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("gave up after %s, want about the connect timeout", d)
	}
	proxy.Unblock()
	if _, err := s.Stat(ctx, "/"); err != nil {
		t.Fatalf("once the host answers: %v", err)
	}
}

func TestPIDWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		pid    int64
		out    string
	}{
		{name: "mark first", writes: []string{"lockstep-pgid:123\nerr"}, pid: 123, out: "err"},
		{name: "split writes", writes: []string{"lock", "step-pgid:4", "5\n", "a\n", "b"}, pid: 45, out: "a\nb"},
		{name: "chatter before", writes: []string{"bashrc says hi\n", "lockstep-pgid:7\nx"}, pid: 7, out: "bashrc says hi\nx"},
		{name: "no mark, no newline", writes: []string{"just text"}, out: "just text"},
		{name: "a second mark is output", writes: []string{"lockstep-pgid:1\nlockstep-pgid:2\n"}, pid: 1, out: "lockstep-pgid:2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			w := &pidWriter{w: &out}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			w.flush()
			if w.pid.Load() != tt.pid || out.String() != tt.out {
				t.Errorf("pid %d, out %q; want %d, %q", w.pid.Load(), out.String(), tt.pid, tt.out)
			}
		})
	}
}

func TestSSHWorkerStartFailure(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	// A forced command stands in for a login shell that refuses to run
	// anything: the error must carry what the host said.
	b, err := os.ReadFile(filepath.Join(srv.Dir, "authorized_keys"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(srv.Dir, "authorized_keys"), append([]byte(`command="echo This account is currently not available. >&2; exit 1" `), b...), 0o600)
	s := testSSH(t, srv)
	_, err = s.Stat(ctxFor(t, time.Minute), "/")
	if err == nil || !strings.Contains(err.Error(), "This account is currently not available.") || errors.Is(err, ErrDisconnected) {
		t.Fatalf("err = %v", err)
	}
}

// TestSSHCancelledDuringLogin cuts calls short while sshd's login shell
// is still reading its rc files (a pyenv .bashrc takes seconds): the
// command's shell, once it starts, must not run on after lockstep has
// given up on it. A worker whose start was given up is told to end, and
// Close waits for it to have gone: without that the worker case fails.
// The run case holds by sshd as much as by lockstep: a channel closed
// before the shell read its stdin loses the script, so even a Run that
// closed at once left nothing running (checked: it passes with the old
// order, and with no end line, and a login ignoring SIGPIPE); it stays
// as the guard of what the user sees. What the Run's wait for the pid
// with the session open changes is when it returns (at the pid, not
// after pgidWait), which no test times.
func TestSSHCancelledDuringLogin(t *testing.T) {
	sshtest.RequireSSHD(t)
	dir := t.TempDir()
	// bash run by sshd reads ~/.bashrc, of $HOME: it holds the first
	// session whose command holds the text in match until gate exists,
	// its pid written.
	gate := filepath.Join(dir, ".bashrc")
	script := fmt.Sprintf(`d=%s
if [ -e "$d/match" ]; then
	case $BASH_EXECUTION_STRING in
	*"$(cat "$d/match")"*)
		if mkdir "$d/taken" 2>/dev/null; then
			echo $$ >"$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
			while [ ! -e "$d/gate" ]; do sleep 0.01; done
		fi ;;
	esac
fi
`, dir)
	if err := os.WriteFile(gate, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.StartSSHD(t, "SetEnv HOME="+dir)

	// held arms the gate for commands holding match and returns the pid
	// of the shell it holds once one comes.
	held := func(t *testing.T, match string) func() int {
		for _, f := range []string{"taken", "pid", "gate"} {
			os.RemoveAll(filepath.Join(dir, f))
		}
		if err := os.WriteFile(filepath.Join(dir, "match"), []byte(match), 0o644); err != nil {
			t.Fatal(err)
		}
		return func() int {
			ctx := ctxFor(t, time.Minute)
			for {
				if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
					pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
					if err != nil {
						t.Fatal(err)
					}
					return pid
				}
				select {
				case <-ctx.Done():
					t.Fatal("no session was held at its login")
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	open := func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// gone: no such process, or one that has exited and awaits its reaping.
	gone := func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "Z")
	}

	t.Run("run", func(t *testing.T) {
		s := testSSH(t, srv)
		if _, err := s.Stat(ctxFor(t, time.Minute), dir); err != nil {
			t.Fatal(err) // connected, a worker started: only the Run is held
		}
		pidOf := held(t, pgidMark)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := s.Run(ctx, Command{Line: "sleep 300"})
			done <- err
		}()
		pid := pidOf()
		cancel()
		open(t)
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run cut short = %v, want context.Canceled", err)
		}
		if !gone(pid) {
			exec.Command("kill", "-KILL", "--", "-"+strconv.Itoa(pid)).Run()
			t.Fatalf("the command's shell (pid %d) runs on after the cancelled Run returned", pid)
		}
	})

	t.Run("worker", func(t *testing.T) {
		s := testSSH(t, srv)
		pidOf := held(t, workerMark)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := s.Stat(ctx, dir)
			done <- err
		}()
		pid := pidOf()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Stat cut short = %v, want context.Canceled", err)
		}
		closed := make(chan struct{})
		go func() { s.Close(); close(closed) }()
		open(t)
		<-closed
		if !gone(pid) {
			exec.Command("kill", "-KILL", strconv.Itoa(pid)).Run()
			t.Fatalf("the worker's shell (pid %d) runs on after Close returned", pid)
		}
	})
}

// TestStdinScriptRunsOnlyWhole feeds the shell a Run's script the way
// sshd does, whole and cut short (the connection dropped mid-write):
// the whole one runs as written, trailing newlines and all; of one cut
// short not a line runs.
func TestStdinScriptRunsOnlyWhole(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	script := "touch " + ran + "\nprintf '%s|' \"$lockstep_script$lockstep_body\" a\nprintf 'x\\n\\n'\n\n\n"
	whole := script + "\n" + scriptEnd + "\n"
	run := func(stdin string) (string, string, int) {
		cmd := exec.Command("/bin/sh", "-c", stdinScript)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errs, code := run(whole)
	if code != 0 || out != "|a|x\n\n" || errs != "" {
		t.Fatalf("the whole script: exit %d, stdout %q, stderr %q; want 0, %q (its variables unset), nothing", code, out, errs, "|a|x\n\n")
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the whole script did not run: %v", err)
	}
	os.Remove(ran)
	for _, cut := range []int{0, len(script) / 2, len(script), len(whole) - 2, len(whole) - 1} {
		out, errs, code := run(whole[:cut])
		if code != 125 || out != "" || !strings.Contains(errs, "came cut short") {
			t.Errorf("cut at %d of %d bytes: exit %d, stdout %q, stderr %q; want 125, nothing, the reason", cut, len(whole), code, out, errs)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("cut at %d of %d bytes: the script's first line ran", cut, len(whole))
		}
	}
}

// On a busy host, processes of others end under every round of a Run's
// look (a fleet's hosts sharing one process table did so in 45 of 50
// looks): the look then greps every process for the mark itself, and
// still says what it found, with no call after it.
func TestSSHRunLooksUnderChurn(t *testing.T) {
	srv := sshtest.StartSSHD(t, "SetEnv SHLVL=1")
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	// Short-lived processes of somebody else's, on the host's (this
	// machine's) process table, as fast as two shells make them.
	for range 2 {
		churn := exec.Command("/bin/sh", "-c", "while :; do /bin/true; done")
		if err := churn.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { churn.Process.Kill(); churn.Wait() })
	}
	for i := range 5 {
		res, err := s.Run(ctx, Command{Line: "true"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.LeftNothing {
			t.Errorf("run %d of true: the look left it to Members; want it to say nothing was left", i)
		}
	}
	res, err := s.Run(ctx, Command{Line: "sleep 42.6 >/dev/null 2>&1 &"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background(), res.Owned(), 0) })
	if res.LeftNothing {
		t.Errorf("the look says a command that left a sleep left nothing")
	}
	if ms, err := Leftovers(ctx, s, res); err != nil || len(ms) != 1 {
		t.Errorf("leftovers %+v, %v; want the sleep", ms, err)
	}
}

// Until sshd has run a command on the connection (and turned Nagle off),
// the connection ACKs what it reads at once: sshd's small packets would
// otherwise wait on Linux's delayed ACK, 40 ms, the first session's open
// among them. Once a command ran, it ACKs as TCP does.
func TestSSHAcksAtOnceUntilACommandRan(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, time.Minute)
	c, err := s.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.acks == nil {
		t.Fatal("a direct connection has no quick ACKs")
	}
	quick := func() int {
		var v int
		var gerr error
		if err := c.acks.raw.Control(func(fd uintptr) {
			v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		return v
	}
	if c.acks.done.Load() || quick() != 1 {
		t.Fatalf("after the handshake: done %v, TCP_QUICKACK %d; want quick ACKs", c.acks.done.Load(), quick())
	}
	if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
		t.Fatal(err)
	}
	if !c.acks.done.Load() {
		t.Fatal("a command ran, and the connection still sets TCP_QUICKACK after every read")
	}
}
