package targets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lockstep/targets/sshtest"
)

// SHA256 hashes where the file lies, on either target, and says when the
// file is missing.
func TestSHA256(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "blob")
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])

	check := func(t *testing.T, tg Target) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got, fi, err := tg.SHA256(ctx, path)
		if err != nil || got != want || !fi.Exists || fi.Size != int64(len(data)) {
			t.Fatalf("SHA256 = %q, %+v, %v; want %q", got, fi, err, want)
		}
		got, fi, err = tg.SHA256(ctx, filepath.Join(dir, "missing"))
		if err != nil || got != "" || fi.Exists {
			t.Fatalf("SHA256 of a missing file = %q, %+v, %v", got, fi, err)
		}
	}
	t.Run("local", func(t *testing.T) { check(t, NewLocal()) })
	t.Run("ssh", func(t *testing.T) {
		srv := sshtest.StartSSHD(t)
		check(t, testSSH(t, srv))
	})
}
