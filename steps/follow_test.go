package steps

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lockstep/targets"
)

func TestFollowerLastLineAndTail(t *testing.T) {
	// The definitions, over every line: what reading back from the end
	// must agree with.
	lastLine := func(text string) string {
		lines := LinesOf(text)
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				return strings.TrimRight(lines[i], "\r")
			}
		}
		return ""
	}
	tail := func(text string, n int) []string {
		lines := LinesOf(text)
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		return lines
	}
	for _, text := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\nb", "a\nb\n", "a\nb\n\n\n", "a\n  \n\t\n",
		"one\r\ntwo\r\n", "\nx", "first\n\nlast\n   ", "a\nb\nc\nd\ne\n",
	} {
		f := &Follower{text: []byte(text)}
		if got, want := f.LastLine(), lastLine(text); got != want {
			t.Errorf("LastLine(%q) = %q, want %q", text, got, want)
		}
		for n := 1; n <= 6; n++ {
			if got, want := f.Tail(n), tail(text, n); !slices.Equal(got, want) {
				t.Errorf("Tail(%q, %d) = %q, want %q", text, n, got, want)
			}
		}
	}
}

func TestFollowerReadChangesWithText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	f := FollowStart(targets.NewLocal(), path)
	ctx := context.Background()
	if f.Poll(ctx); f.Read() != 0 {
		t.Fatalf("Read of a missing file = %d", f.Read())
	}
	os.WriteFile(path, []byte("one\n"), 0o600)
	f.Poll(ctx)
	first := f.Read()
	if first != 4 || f.Text() != "one\n" {
		t.Fatalf("Read = %d, Text = %q", first, f.Text())
	}
	if f.Poll(ctx); f.Read() != first {
		t.Errorf("Read moved to %d with nothing written", f.Read())
	}
	// Truncated and written again, shorter: the text grows, so Read moves.
	os.WriteFile(path, []byte("2\n"), 0o600)
	f.Poll(ctx)
	if f.Read() == first || f.Text() != "one\n2\n" {
		t.Errorf("after truncation: Read = %d, Text = %q", f.Read(), f.Text())
	}
}
