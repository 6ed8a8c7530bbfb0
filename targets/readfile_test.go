package targets

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lockstep/targets/sshtest"
)

func TestReadFileByIdentity(t *testing.T) {
	t.Run("local", func(t *testing.T) { testReadFileByIdentity(t, NewLocal()) })
	t.Run("ssh", func(t *testing.T) { testReadFileByIdentity(t, testSSH(t, sshtest.StartSSHD(t))) })
}

// testReadFileByIdentity: a file is read by its identity wherever it is
// renamed beside its name, never the new file at its path, and not at all
// once it is gone.
func testReadFileByIdentity(t *testing.T, tg Target) {
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	os.WriteFile(path, []byte("mine\n"), 0o600)
	fi, err := tg.Stat(ctx, path)
	if err != nil || !fi.Exists {
		t.Fatal(fi, err)
	}
	ref := FileRef{Path: path, ID: fi.ID}
	read := func(ref FileRef) (string, FileInfo) {
		t.Helper()
		b, info, err := tg.ReadFile(ctx, ref, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), info
	}
	if got, info := read(ref); got != "mine\n" || info.Path != path || info.ID != fi.ID {
		t.Errorf("at its path: %q, %+v", got, info)
	}
	os.Rename(path, path+".1")
	os.WriteFile(path, []byte("someone else's\n"), 0o600)
	got, info := read(ref)
	if got != "mine\n" || info.Path != path+".1" {
		t.Errorf("renamed beside a new file: %q, %+v; want the renamed file read", got, info)
	}
	ref.At = info.Path
	if got, _ := read(ref); got != "mine\n" {
		t.Errorf("from where it was last found: %q", got)
	}
	os.Remove(path + ".1")
	if got, info := read(ref); got != "" || info.Exists {
		t.Errorf("gone: %q, %+v; want not found, and the new file never read", got, info)
	}
	if _, _, err := tg.ReadFile(context.Background(), FileRef{Path: path}, 0, 10); err == nil {
		t.Errorf("ReadFile without an identity: no error")
	}
}

// The cost of reading a log by identity over SSH, beside reading it by
// name: where the file is at its path (the usual case), moved aside (found
// beside its old name, then at the place found), and deleted but held open
// by a process (found through /proc/PID/fd).
func BenchmarkSSHReadFile(b *testing.B) {
	s := testSSH(b, sshtest.StartSSHD(b))
	ctx := ctxFor(b, 10*time.Minute)
	dir := b.TempDir()
	path := filepath.Join(dir, "server.log")
	p, err := s.Start(ctx, Command{Line: "echo ready; exec sleep 600"}, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Stop(context.Background(), p, time.Second) })
	read := func(b *testing.B, ref FileRef) {
		for b.Loop() {
			if _, fi, err := s.ReadFile(ctx, ref, 0, 1<<20); err != nil || !fi.Exists {
				b.Fatal(fi, err)
			}
		}
	}
	b.Run("ReadAt", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.ReadAt(ctx, path, 0, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("at its path", func(b *testing.B) { read(b, p.LogFile()) })
	aside, _ := s.MoveAside(ctx, path)
	os.WriteFile(path, []byte("another launch\n"), 0o600)
	b.Run("moved aside, found beside", func(b *testing.B) {
		ref := p.LogFile()
		ref.PIDs = nil
		read(b, ref)
	})
	b.Run("moved aside, found before", func(b *testing.B) {
		ref := p.LogFile()
		ref.At = aside
		read(b, ref)
	})
	os.Remove(aside)
	b.Run("deleted, held by the process", func(b *testing.B) { read(b, p.LogFile()) })
}

func TestLogThatIsNotAFile(t *testing.T) {
	t.Run("local", func(t *testing.T) { testLogThatIsNotAFile(t, NewLocal()) })
	t.Run("ssh", func(t *testing.T) { testLogThatIsNotAFile(t, testSSH(t, sshtest.StartSSHD(t))) })
}

// testLogThatIsNotAFile: a log that is a device, a fifo or a directory is
// never moved aside (log = "/dev/null" must not rename /dev/null), and a
// launch writing to a device has no identity to read its log by.
func testLogThatIsNotAFile(t *testing.T, tg Target) {
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		if got, err := tg.MoveAside(ctx, p); got != "" || err != nil {
			t.Errorf("MoveAside(%s) = %q, %v; want it left alone", p, got, err)
		}
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	p, err := tg.Start(ctx, Command{Line: "echo gone; exec sleep 100"}, "/dev/null")
	if err != nil {
		t.Fatalf("Start with log /dev/null: %v", err)
	}
	defer tg.Stop(context.Background(), p, time.Second)
	if p.LogID != "" {
		t.Errorf("a log on /dev/null has LogID %q; want none", p.LogID)
	}
}
