package targets

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
	"lockstep/targets/sshtest"
)

// TestKnownHostsDBShared: a fleet's hosts share one parse of their
// known_hosts while the files stay as they were; a file rewritten in
// place (same size, same inode), replaced, or changed within the last
// second is read again, so a key taken out of it is refused at once.
func TestKnownHostsDBShared(t *testing.T) {
	dir := t.TempDir()
	keyA, err := sshtest.WriteKey(filepath.Join(dir, "a"), "")
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := sshtest.WriteKey(filepath.Join(dir, "b"), "")
	if err != nil {
		t.Fatal(err)
	}
	keyC, err := sshtest.WriteKey(filepath.Join(dir, "c"), "")
	if err != nil {
		t.Fatal(err)
	}
	const host, port = "10.0.0.7", 22
	known := filepath.Join(dir, "known_hosts")
	lineA, lineB := sshtest.KnownHostsLine(host, port, keyA), sshtest.KnownHostsLine(host, port, keyB)
	if len(lineA) != len(lineB) {
		t.Fatalf("the two lines differ in length (%d, %d): the in-place case needs equal sizes", len(lineA), len(lineB))
	}
	past := time.Now().Add(-time.Hour)
	write := func(line string, mtime time.Time) {
		t.Helper()
		f, err := os.OpenFile(known, os.O_WRONLY|os.O_CREATE, 0o600) // in place: the same inode
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(line), 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(known, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// The change time cannot be set back: "later" is when it has settled.
	later := time.Now().Add(2 * settled)
	accepts := func(db *knownhosts.HostKeyDB, key ssh.PublicKey) bool {
		t.Helper()
		err := db.HostKeyCallback()(net.JoinHostPort(host, "22"), &net.TCPAddr{IP: net.ParseIP(host), Port: port}, key)
		var ke *xknownhosts.KeyError
		if err != nil && !errors.As(err, &ke) {
			t.Fatal(err)
		}
		return err == nil
	}
	get := func(now time.Time) *knownhosts.HostKeyDB {
		t.Helper()
		db, err := knownHostsDBAt([]string{known}, now)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}

	write(lineA, past)
	first := get(later)
	if !accepts(first, keyA) || accepts(first, keyB) {
		t.Fatal("the parse does not hold key A alone")
	}

	t.Run("unchanged: one parse for every host at once", func(t *testing.T) {
		dbs := make([]*knownhosts.HostKeyDB, 50)
		var wg sync.WaitGroup
		for i := range dbs {
			wg.Go(func() { dbs[i] = get(later) })
		}
		wg.Wait()
		for i, db := range dbs {
			if db != first {
				t.Fatalf("host %d got a parse of its own", i)
			}
		}
	})

	t.Run("changed within the last second: parsed for each use", func(t *testing.T) {
		if a, b := get(time.Now()), get(time.Now()); a == first || a == b {
			t.Fatal("a file that changed less than a second ago was not parsed again")
		}
	})

	t.Run("rewritten in place at the same size", func(t *testing.T) {
		write(lineB, past.Add(time.Minute))
		db := get(later)
		if accepts(db, keyA) || !accepts(db, keyB) {
			t.Fatal("key A, taken out of the file, is still accepted from the earlier parse")
		}
	})

	t.Run("replaced by another file", func(t *testing.T) {
		next := known + ".new"
		if err := os.WriteFile(next, []byte(sshtest.KnownHostsLine(host, port, keyC)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(next, past.Add(time.Minute), past.Add(time.Minute)); err != nil { // the same times as the file it replaces
			t.Fatal(err)
		}
		if err := os.Rename(next, known); err != nil {
			t.Fatal(err)
		}
		db := get(later)
		if !accepts(db, keyC) || accepts(db, keyA) || accepts(db, keyB) {
			t.Fatal("the file replaced holds key C alone, but its earlier parses are still used")
		}
	})
}
