package targets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"lockstep/targets/sshtest"
)

// watchCases are what a log's writer and its rotation do to it. Each
// starts from the file (or its absence) that setup leaves and ends with
// act; the watch must signal, and then go on signalling for lines
// appended at the name: it follows whatever file is there now.
var watchCases = []struct {
	name  string
	setup func(t *testing.T, path string)
	act   func(t *testing.T, path string)
}{
	{
		name:  "append",
		setup: func(t *testing.T, p string) { writeFile(t, p, "loading\n") },
		act:   func(t *testing.T, p string) { appendFile(t, p, "ready\n") },
	},
	{
		name:  "a half line",
		setup: func(t *testing.T, p string) { writeFile(t, p, "loading\n") },
		act:   func(t *testing.T, p string) { appendFile(t, p, "shards:  12%\r") },
	},
	{
		name:  "truncation",
		setup: func(t *testing.T, p string) { writeFile(t, p, "an old run's lines\n") },
		act: func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name:  "rename and recreate",
		setup: func(t *testing.T, p string) { writeFile(t, p, "before the rotation\n") },
		act: func(t *testing.T, p string) {
			if err := os.Rename(p, p+".1"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, "after the rotation\n")
		},
	},
	{
		name:  "replaced by a rename over it",
		setup: func(t *testing.T, p string) { writeFile(t, p, "old\n") },
		act: func(t *testing.T, p string) {
			writeFile(t, p+".new", "new\n")
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name:  "created after the watch began",
		setup: func(t *testing.T, p string) {},
		act:   func(t *testing.T, p string) { writeFile(t, p, "first line\n") },
	},
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// awaitSignal waits for a signal on c; a closed channel or the end of ctx
// fails the test.
func awaitSignal(t *testing.T, ctx context.Context, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-c:
		if !ok {
			t.Fatalf("%s: the watch ended instead of signalling", what)
		}
	case <-ctx.Done():
		t.Fatalf("%s: no signal: %v", what, ctx.Err())
	}
}

// drain takes a pending signal, if any.
func drain(c <-chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// awaitClosed waits for the watch to end.
func awaitClosed(t *testing.T, ctx context.Context, c <-chan struct{}) {
	t.Helper()
	for {
		select {
		case _, ok := <-c:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the watch did not end: %v", ctx.Err())
		}
	}
}

// followUps is how many lines are appended after each case's act, each
// awaited on its own after the channel is drained. One action can make a
// few signals arrive one after another (an event per syscall; tail's
// message, then the data): more appends than that, each seen, show that
// the watch follows the file now at the name, not leftovers.
const followUps = 12

func testWatchCases(t *testing.T, ctx context.Context, w FileWatcher, dir func(t *testing.T) string) {
	for _, tc := range watchCases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir(t), "app.log")
			tc.setup(t, p)
			wctx, cancel := context.WithCancel(ctx)
			c, err := w.WatchFiles(wctx, p)
			if err != nil {
				t.Fatalf("WatchFiles: %v", err)
			}
			tc.act(t, p)
			awaitSignal(t, ctx, c, tc.name)
			for i := range followUps {
				drain(c)
				appendFile(t, p, "a line\n")
				awaitSignal(t, ctx, c, fmt.Sprintf("line %d appended after %s", i+1, tc.name))
			}
			cancel()
			awaitClosed(t, ctx, c)
		})
	}
}

func TestLocalWatchFiles(t *testing.T) {
	ctx := localTestContext(t)
	testWatchCases(t, ctx, NewLocal(), func(t *testing.T) string { return t.TempDir() })

	t.Run("a file rotated away is still watched", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "app.log")
		writeFile(t, p, "one\n")
		c, err := NewLocal().WatchFiles(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0) // the writer keeps it open
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Rename(p, p+".1"); err != nil {
			t.Fatal(err)
		}
		awaitSignal(t, ctx, c, "rename")
		for range followUps {
			drain(c)
			if _, err := f.WriteString("still written\n"); err != nil {
				t.Fatal(err)
			}
			awaitSignal(t, ctx, c, "a line written to the rotated file")
		}
	})
	t.Run("a missing directory is an error", func(t *testing.T) {
		_, err := NewLocal().WatchFiles(ctx, filepath.Join(t.TempDir(), "nope", "app.log"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want one wrapping ErrNotExist", err)
		}
	})
	t.Run("the directory moved away ends the watch", func(t *testing.T) {
		base := t.TempDir()
		d := filepath.Join(base, "logs")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		c, err := NewLocal().WatchFiles(ctx, filepath.Join(d, "app.log"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(d, filepath.Join(base, "logs.old")); err != nil {
			t.Fatal(err)
		}
		awaitClosed(t, ctx, c)
	})
}

func TestSSHWatchFiles(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	s := testSSH(t, srv)
	ctx := ctxFor(t, 2*time.Minute)
	testWatchCases(t, ctx, s, func(t *testing.T) string { return t.TempDir() })

	t.Run("nothing left on the host once the watch ends", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "server-watched.log")
		writeFile(t, p, "one\n")
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := s.watch(wctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := s.Members(ctx, Process{Mark: w.mark})
		if err != nil || !hasTail(ms) {
			t.Fatalf("the watch's processes on the host: %+v, %v; want its tail among them", ms, err)
		}
		if ms, err = s.Members(ctx, Process{Mark: w.mark}); err != nil {
			t.Fatal(err)
		}
		// A process probe looking for the log's writer does not find
		// lockstep's tail of the log.
		ps, err := s.Processes(ctx, regexp.QuoteMeta("server-watched"))
		if err != nil || len(ps) != 0 {
			t.Fatalf("Processes(server-watched) = %+v, %v; want none (the watch is lockstep's)", ps, err)
		}
		cancel()
		awaitClosed(t, ctx, w.c)
		if ms, err := s.Members(ctx, Process{Mark: w.mark}); err != nil || hasTail(ms) {
			t.Fatalf("after the watch ended: %+v, %v; want no tail left", ms, err)
		}
		// The watcher idles for the next watch, until the connection
		// ends. Closed while a watch runs: once Close has returned,
		// nothing of it is left, its tails neither (a look made at once,
		// as a user's pgrep after lockstep exits).
		w2, err := s.watch(ctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if ms, err := s.Members(ctx, Process{Mark: w2.mark}); err != nil || !hasTail(ms) {
			t.Fatalf("the second watch's processes on the host: %+v, %v; want its tail among them", ms, err)
		}
		s.Close()
		// The host is this machine: looked at here, with no round trip
		// to give the host time.
		if ms, err = NewLocal().Members(ctx, Process{Mark: w.mark}); err != nil || len(ms) != 0 {
			t.Fatalf("the watcher's processes once Close returned: %+v, %v; want none", ms, err)
		}
	})
	s = testSSH(t, srv) // the one before was closed
	t.Run("nothing left on the host once the connection drops", func(t *testing.T) {
		cut, proxy := proxied(t, srv)
		p := filepath.Join(t.TempDir(), "app.log")
		writeFile(t, p, "one\n")
		w, err := cut.watch(ctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if ms, err := s.Members(ctx, Process{Mark: w.mark}); err != nil || !hasTail(ms) {
			t.Fatalf("the watch's processes on the host: %+v, %v", ms, err)
		}
		proxy.Sever()
		awaitClosed(t, ctx, w.c)
		// The host's side ends once sshd sees the connection gone: its
		// stdin ends. Looked at from another connection.
		var ms []ProcessInfo
		if err := pollUntil(ctx, 20*time.Millisecond, func() (bool, error) {
			ms, err = s.Members(ctx, Process{Mark: w.mark})
			return len(ms) == 0, err
		}); err != nil {
			t.Fatalf("the watch's processes after the drop: %+v, %v", ms, err)
		}
	})
	t.Run("nothing left on the host once the link dies silently", func(t *testing.T) {
		cut, proxy := proxied(t, srv, func(c *SSHConfig) {
			c.KeepaliveInterval = 200 * time.Millisecond
			c.KeepaliveMax = 2
		})
		p := filepath.Join(t.TempDir(), "app.log")
		writeFile(t, p, "one\n")
		w, err := cut.watch(ctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		proxy.Freeze() // sshd sees nothing wrong: only the beats stop
		awaitClosed(t, ctx, w.c)
		var ms []ProcessInfo
		if err := pollUntil(ctx, 20*time.Millisecond, func() (bool, error) {
			ms, err = s.Members(ctx, Process{Mark: w.mark})
			return len(ms) == 0, err
		}); err != nil {
			t.Fatalf("the watch's processes after the link died: %+v, %v", ms, err)
		}
	})
	t.Run("a missing directory is an error", func(t *testing.T) {
		_, err := s.WatchFiles(ctx, filepath.Join(t.TempDir(), "nope", "app.log"))
		if err == nil || !strings.Contains(err.Error(), "no directory") {
			t.Fatalf("err = %v, want one saying the directory is missing", err)
		}
		// Its session is free again: the next watch starts.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c, err := s.WatchFiles(wctx, filepath.Join(t.TempDir(), "app.log"))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		awaitClosed(t, ctx, c)
	})
}

func hasTail(ms []ProcessInfo) bool {
	for _, m := range ms {
		if strings.HasPrefix(m.Command, "tail ") {
			return true
		}
	}
	return false
}
