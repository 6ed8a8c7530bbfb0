package probes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lockstep/targets"
)

func TestFollowerLastLineAndTail(t *testing.T) {
	// The definitions, over every line: what reading back from the end
	// must agree with.
	lastLine := func(text string) string {
		lines := LinesOf(text)
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				return lines[i]
			}
		}
		return ""
	}
	// A terminal shows each line as its last redraw with something in it.
	tail := func(text string, n int) []string {
		var lines []string
		s := strings.TrimRight(text, "\r\n")
		if s == "" {
			return nil
		}
		for _, l := range strings.Split(s, "\n") {
			shown := ""
			for _, r := range strings.Split(strings.TrimSuffix(l, "\r"), "\r") {
				if r != "" {
					shown = r
				}
			}
			lines = append(lines, shown)
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		return lines
	}
	for _, text := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\nb", "a\nb\n", "a\nb\n\n\n", "a\n  \n\t\n",
		"one\r\ntwo\r\n", "\nx", "first\n\nlast\n   ", "a\nb\nc\nd\ne\n",
		"\rbar 1\rbar 2\rbar 3\n", "start\n\rbar 1\rbar 2\r", "a\r\r\nb\n", "x\r   \r",
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

func TestLinesOf(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\n\nb\n\n", []string{"a", "", "b"}},
		// tqdm: each redraw begins with \r; one at a line's start draws nothing.
		{"load\n\rshards: 10%\rshards: 20%\rshards: 100%\n", []string{"load", "shards: 10%", "shards: 20%", "shards: 100%"}},
		{"a\r\r\rb\n", []string{"a", "b"}},
	} {
		if got := LinesOf(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("LinesOf(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// appendTo appends text to the file at path, as a server writes its log.
func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, f *Follower) bool {
	t.Helper()
	grew, err := f.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return grew
}

func TestFollowerHoldsBackHalfLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	f := FollowStart(targets.NewLocal(), path)
	appendTo(t, path, "loading\nThe server is fired up and ")
	poll(t, f)
	if f.Text() != "loading\n" || f.LastLine() != "loading" || !slices.Equal(f.Lines(), []string{"loading"}) {
		t.Fatalf("with a half line written: Text %q, LastLine %q, Lines %q; want the complete line only", f.Text(), f.LastLine(), f.Lines())
	}
	read := f.Read()
	if poll(t, f) || f.Read() != read {
		t.Errorf("nothing new complete, yet Poll reported growth (Read %d -> %d)", read, f.Read())
	}
	appendTo(t, path, "ready to roll!\n")
	if !poll(t, f) {
		t.Errorf("the line's end arrived, yet Poll reported nothing new")
	}
	if got := f.LastLine(); got != "The server is fired up and ready to roll!" {
		t.Errorf("LastLine = %q, want the whole line", got)
	}
	// A \r at the end may be the first half of \r\n: it waits.
	appendTo(t, path, "bye\r")
	poll(t, f)
	if got := f.LastLine(); got != "The server is fired up and ready to roll!" {
		t.Errorf("after \"bye\\r\": LastLine = %q", got)
	}
	appendTo(t, path, "\n")
	poll(t, f)
	if got := f.Lines(); !slices.Equal(got, []string{"loading", "The server is fired up and ready to roll!", "bye"}) {
		t.Errorf("Lines = %q", got)
	}
}

func TestFollowerProgressBar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	f := FollowStart(targets.NewLocal(), path)
	appendTo(t, path, "Loading safetensors checkpoint shards:\n")
	var seen []string
	for _, pct := range []string{"0%", "25%", "50%", "100%"} {
		// As tqdm writes: \r, then the bar, no line end.
		appendTo(t, path, "\rLoading safetensors checkpoint shards: "+pct+" Completed | 1/4")
		poll(t, f)
		seen = append(seen, f.LastLine())
	}
	appendTo(t, path, "\n")
	poll(t, f)
	seen = append(seen, f.LastLine())
	// Each redraw is a line once the next one begins.
	want := []string{
		"Loading safetensors checkpoint shards:",
		"Loading safetensors checkpoint shards: 0% Completed | 1/4",
		"Loading safetensors checkpoint shards: 25% Completed | 1/4",
		"Loading safetensors checkpoint shards: 50% Completed | 1/4",
		"Loading safetensors checkpoint shards: 100% Completed | 1/4",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("last lines as the bar moved:\n%q\nwant\n%q", seen, want)
	}
	if got := f.Tail(5); !slices.Equal(got, []string{"Loading safetensors checkpoint shards:", "Loading safetensors checkpoint shards: 100% Completed | 1/4"}) {
		t.Errorf("Tail shows %q; want the bar once, at its last redraw", got)
	}
}

func TestFollowerFromTheEndSkipsAFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendTo(t, path, "old line\nready to ")
	f, err := FollowFrom(context.Background(), targets.NewLocal(), path)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "serve\nnew line\n")
	poll(t, f)
	if got := f.Lines(); !slices.Equal(got, []string{"new line"}) {
		t.Errorf("Lines = %q; want only the line begun after the follower", got)
	}
	// From a line's end, nothing is dropped.
	g, _ := FollowFrom(context.Background(), targets.NewLocal(), path)
	appendTo(t, path, "next\n")
	poll(t, g)
	if got := g.Lines(); !slices.Equal(got, []string{"next"}) {
		t.Errorf("Lines = %q; want [next]", got)
	}
}

func TestFollowerRotationLosesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendTo(t, path, "before the follower\n")
	f, err := FollowFrom(context.Background(), targets.NewLocal(), path)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "loading\n")
	poll(t, f)
	// Written after the last poll, just before the rollover: it counts.
	appendTo(t, path, "Traceback (most recent call last):\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	// Moved away, no new file yet: the old one is still read.
	appendTo(t, path+".1", "  File \"server.py\"\n")
	poll(t, f)
	appendTo(t, path, "a new file\n")
	// The writer has not reopened its log yet: it still writes the old one.
	appendTo(t, path+".1", "RuntimeError: CUDA error\n")
	poll(t, f)
	appendTo(t, path, "more\n")
	poll(t, f)
	got := f.Lines()
	want := []string{"loading", "Traceback (most recent call last):", "  File \"server.py\"", "RuntimeError: CUDA error", "a new file", "more"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("line %q lost across the rotation; lines: %q", w, got)
		}
	}
	if slices.Contains(got, "before the follower") {
		t.Errorf("a line from before the follower was read: %q", got)
	}
	// Rotated again: the first file is now app.log.2, the second app.log.1.
	appendTo(t, path, "last in the second\n")
	os.Rename(path+".1", path+".2")
	os.Rename(path, path+".1")
	appendTo(t, path+".2", "late in the first\n")
	appendTo(t, path, "in the third\n")
	poll(t, f)
	for _, w := range []string{"last in the second", "late in the first", "in the third"} {
		if !slices.Contains(f.Lines(), w) {
			t.Errorf("line %q lost across the second rotation; lines: %q", w, f.Lines())
		}
	}
}

func TestFollowerTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	f := FollowStart(targets.NewLocal(), path)
	if poll(t, f); f.Read() != 0 {
		t.Fatalf("Read of a missing file = %d", f.Read())
	}
	appendTo(t, path, "one\n")
	poll(t, f)
	first := f.Read()
	if first != 4 || f.Text() != "one\n" {
		t.Fatalf("Read = %d, Text = %q", first, f.Text())
	}
	if poll(t, f); f.Read() != first {
		t.Errorf("Read moved to %d with nothing written", f.Read())
	}
	// Truncated and written again, shorter: the text grows, so Read moves.
	os.WriteFile(path, []byte("2\n"), 0o600)
	poll(t, f)
	if f.Read() == first || f.Text() != "one\n2\n" {
		t.Errorf("after truncation: Read = %d, Text = %q", f.Read(), f.Text())
	}
}

// waitFor polls f until its text holds want, or the test's deadline.
func waitFor(t *testing.T, ctx context.Context, f *Follower, want string) {
	t.Helper()
	for !strings.Contains(f.Text(), want) {
		if _, err := f.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%q never appeared; text %q", want, f.Text())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestFollowLaunchReadsOnlyItsOwnLog(t *testing.T) {
	testFollowLaunchReadsOnlyItsOwnLog(t, targets.NewLocal())
}

// testFollowLaunchReadsOnlyItsOwnLog launches a server, then a second
// attempt moves its log aside and launches another at the same path: each
// launch's follower reads its own server's lines only.
func testFollowLaunchReadsOnlyItsOwnLog(t *testing.T, tg targets.Target) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	log, trigger := filepath.Join(dir, "server.log"), filepath.Join(dir, "go")
	server := func(name string) string {
		return "echo '" + name + " starting'; while [ ! -e " + trigger + " ]; do sleep 0.01; done; echo '" + name + " ready'; exec sleep 100"
	}
	a, err := tg.Start(ctx, targets.Command{Line: server("first")}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Stop(context.Background(), a, time.Second)
	fa := FollowLaunch(tg, a, 0)
	waitFor(t, ctx, fa, "first starting")
	// A launch never writes into a file that is there.
	if _, err := tg.Start(ctx, targets.Command{Line: "echo intruder"}, log); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Start on an existing log: %v; want it refused", err)
	}
	moved, err := tg.MoveAside(ctx, log)
	if err != nil || moved == "" {
		t.Fatalf("MoveAside = %q, %v", moved, err)
	}
	b, err := tg.Start(ctx, targets.Command{Line: server("second")}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Stop(context.Background(), b, time.Second)
	fb := FollowLaunch(tg, b, 0)
	waitFor(t, ctx, fb, "second starting")
	if _, err := tg.Run(ctx, targets.Command{Line: "touch " + trigger}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, fa, "first ready")
	waitFor(t, ctx, fb, "second ready")
	if got := fa.Lines(); !slices.Equal(got, []string{"first starting", "first ready"}) {
		t.Errorf("the first launch's log reads %q", got)
	}
	if got := fb.Lines(); !slices.Equal(got, []string{"second starting", "second ready"}) {
		t.Errorf("the second launch's log reads %q", got)
	}
	if got := LaunchTail(ctx, tg, a, 5); !slices.Equal(got, []string{"first starting", "first ready"}) {
		t.Errorf("LaunchTail of the first = %q", got)
	}
	// A process's unfinished last line is in its tail once it has ended.
	c, err := tg.Start(ctx, targets.Command{Line: "printf 'loading\\nSegmentation fault'"}, filepath.Join(dir, "crash.log"))
	if err != nil {
		t.Fatal(err)
	}
	for st, _ := tg.Inspect(ctx, c); !st.Exited; st, _ = tg.Inspect(ctx, c) {
		if ctx.Err() != nil {
			t.Fatal("the crashing launch never exited")
		}
	}
	if got := LaunchTail(ctx, tg, c, 5); !slices.Equal(got, []string{"loading", "Segmentation fault"}) {
		t.Errorf("LaunchTail of an ended process = %q; want its last, unfinished line too", got)
	}
	// Deleted, the file is still read through the process holding it.
	os.Remove(moved)
	fa2 := FollowLaunch(tg, a, 0)
	waitFor(t, ctx, fa2, "first ready")
}
