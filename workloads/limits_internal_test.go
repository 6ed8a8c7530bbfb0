package workloads

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The limits on what a dataset keeps, reached without making files of
// that size: the sampler is fed what a reader would give it.
func TestKeptLimits(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		s := newSampler(&Config{})
		mib := strings.Repeat("a", 1<<20) // one string, shared by every turn
		for i := range MaxKeptBytes>>20 + 1 {
			s.add(convo{record: i, turns: []turn{{text: mib}}})
		}
		want := "d.json: the conversations to keep hold more than 64 MiB of text, the limit: set prompts to sample fewer (or fewer turns)"
		if err := s.err("d.json"); err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
		// A sample of 10 of them is within the limit.
		s = newSampler(&Config{Prompts: 10})
		for i := range MaxKeptBytes>>20 + 1 {
			s.add(convo{record: i, turns: []turn{{text: mib}}})
		}
		if err := s.err("d.json"); err != nil || len(s.result()) != 10 {
			t.Errorf("prompts = 10: error %v, %d kept", err, len(s.kept))
		}
	})
	t.Run("conversations", func(t *testing.T) {
		s := newSampler(&Config{})
		for i := range MaxPrompts + 1 {
			s.add(convo{record: i, turns: []turn{{text: "q"}}})
		}
		want := "d.json: the dataset holds more than 100000 conversations, the limit: set prompts to sample fewer (prompts = 1000 takes 1000 of them, chosen by seed)"
		if err := s.err("d.json"); err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "huge.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: the size is there, the bytes are not written.
		if err := f.Truncate(MaxDatasetBytes + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = Open(context.Background(), Config{Dataset: path})
		if want := path + ": the file is larger than 1024 MiB, the limit: sample it (JSON lines: head -n)"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
}
