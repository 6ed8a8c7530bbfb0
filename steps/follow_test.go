package steps

import (
	"slices"
	"strings"
	"testing"
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
