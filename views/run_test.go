package views

import (
	"strings"
	"testing"
	"time"

	"lockstep/runner/events"
	"lockstep/terminal"
)

// The live view draws the step in progress on one line: elapsed against
// the timeout, a progress bar with the percentage, and the log's last
// line; a finished step becomes a permanent line and the status line is
// cleared.
func TestLiveViewDrawsProgress(t *testing.T) {
	var out strings.Builder
	v := &Live{w: &out, s: style{}, width: func() int { return 200 }}
	st := &events.Step{Addr: "wait.ready", Kind: "wait", Index: 1, Count: 3, Timeout: 30 * time.Minute}
	v.Emit(events.Event{Type: events.StepStarted, Time: time.Now(), Step: st})
	half := 0.5
	v.Emit(events.Event{Type: events.Progressed, Step: st, Progress: &events.Progress{Fraction: &half, LastLine: "loading shards: 50% (4/8)"}})
	v.redraw(0)
	line := out.String()
	for _, want := range []string{"[2/3] wait.ready", "/30m0s", "[██████████░░░░░░░░░░]  50%", "loading shards: 50% (4/8)"} {
		if !strings.Contains(line, want) {
			t.Errorf("status line %q lacks %q", line, want)
		}
	}
	out.Reset()
	v.Emit(events.Event{Type: events.StepFinished, Step: st, Outcome: &events.Outcome{Status: events.Confirmed, Duration: 3 * time.Second}})
	if got := out.String(); !strings.HasPrefix(got, "\r\x1b[K") || !strings.Contains(got, "[2/3] wait.ready: confirmed in 3s\n") {
		t.Errorf("finished step drawn as %q", got)
	}
	out.Reset()
	v.redraw(1)
	if out.Len() != 0 {
		t.Errorf("nothing in progress, yet drew %q", out.String())
	}
}

// Colour only when asked for.
func TestStyleColoursOnlyWhenAsked(t *testing.T) {
	if got := (style{color: false}).red("x"); got != "x" {
		t.Errorf("uncoloured style wrapped: %q", got)
	}
	if got := (style{color: true}).red("x"); got != "\x1b[31mx\x1b[0m" {
		t.Errorf("coloured style gave %q", got)
	}
}

// What a server writes never reaches the terminal raw: its colours,
// cursor moves, carriage returns and other controls are taken out, and a
// long line is cut, in the plain lines and the live view alike.
func TestViewsPrintNoRawControls(t *testing.T) {
	hostile := "\x1b[32mINFO\x1b[0m loading\x1b]0;title\x07 shards:\r 50%\x08\x00\tdone\x1b[2K\x9b1m" + strings.Repeat("x", 400)
	clean := func(t *testing.T, out string) {
		t.Helper()
		body := strings.ReplaceAll(strings.ReplaceAll(out, "\r\x1b[K", ""), "\n", "")
		for _, r := range body {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("printed a control character %U in %q", r, out)
			}
		}
		if !strings.Contains(out, "INFO loading shards:  50%") || !strings.Contains(out, "done") {
			t.Errorf("the text itself was lost: %q", out)
		}
	}
	st := &events.Step{Addr: "wait.ready", Kind: "wait", Index: 0, Count: 1}
	frac := 0.5
	evs := []events.Event{
		{Type: events.Progressed, Step: st, Time: time.Now().Add(time.Hour), Progress: &events.Progress{Fraction: &frac, LastLine: hostile}},
		{Type: events.Observed, Step: st, Observation: &events.Observation{Summary: "probe.server.last_line = " + hostile}},
		{Type: events.StepFinished, Step: st, Outcome: &events.Outcome{Status: events.TimedOut, Reason: "timed out",
			Evidence: &events.Evidence{LogLines: []string{hostile}, Values: map[string]string{"probe.server.last_line": hostile}}}},
	}
	t.Run("plain", func(t *testing.T) {
		var out strings.Builder
		v := NewLines(&out, false)
		for _, e := range evs {
			v.Emit(e)
		}
		clean(t, out.String())
		for _, l := range strings.Split(out.String(), "\n") {
			if n := len([]rune(l)); n > terminal.MaxShownReason+100 {
				t.Errorf("a line of %d characters: not cut", n)
			}
		}
		if !strings.Contains(out.String(), "…") {
			t.Errorf("the 400-character line was not cut: %q", out.String())
		}
	})
	t.Run("live", func(t *testing.T) {
		var out strings.Builder
		v := &Live{w: &out, s: style{}, width: func() int { return 1000 }}
		v.Emit(events.Event{Type: events.StepStarted, Time: time.Now(), Step: st})
		for _, e := range evs[:2] {
			v.Emit(e)
			v.redraw(0)
		}
		clean(t, out.String())
	})
}

// A client's progress bar counts steps, a step's fraction in between; a
// step's end says why it failed, without the raw controls a server wrote.
func TestProgressOf(t *testing.T) {
	st := &events.Step{Addr: "wait.ready", Kind: "wait", Index: 1, Count: 4}
	quarter := 0.25
	for _, c := range []struct {
		e    events.Event
		want Progress
		ok   bool
	}{
		{events.Event{Type: events.StepStarted, Step: st}, Progress{1, 4, "step 2/4 wait.ready: started"}, true},
		{events.Event{Type: events.Progressed, Step: st, Progress: &events.Progress{Fraction: &quarter}}, Progress{1.25, 4, "step 2/4 wait.ready: 25%"}, true},
		{events.Event{Type: events.Progressed, Step: st, Progress: &events.Progress{Done: 3}}, Progress{}, false},
		{events.Event{Type: events.StepFinished, Step: st, Outcome: &events.Outcome{Status: events.Failed, Reason: "probe.log.text = \"\x1b[31mTraceback\x1b[0m\""}},
			Progress{2, 4, `step 2/4 wait.ready: failed (probe.log.text = "Traceback")`}, true},
		{events.Event{Type: events.AttemptFinished, Plan: "p", Attempt: 3, Outcome: &events.Outcome{Status: events.Confirmed}}, Progress{0, 0, "attempt 3 of p: confirmed"}, true},
		{events.Event{Type: events.Observed, Step: st}, Progress{}, false},
	} {
		got, ok := ProgressOf(c.e)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %+v %v, want %+v %v", c.e.Type, got, ok, c.want, c.ok)
		}
	}
}

// The log tails of the launches that died are shown in their names'
// order, and an empty log says so rather than "last 0 lines of" nothing.
func TestLinesShowLogTailsInOrder(t *testing.T) {
	st := &events.Step{Addr: "wait.ready", Kind: "wait", Index: 0, Count: 1}
	ev := events.Event{Type: events.StepFinished, Step: st, Outcome: &events.Outcome{Status: events.Failed, Reason: "launch.redis (daemon pid 9) exited",
		Evidence: &events.Evidence{LogTail: map[string][]string{"launch.web": {"listening"}, "launch.redis": {}, "launch.api": {"Traceback", "OSError"}}}}}
	var out strings.Builder
	NewLines(&out, false).Emit(ev)
	got := out.String()
	want := "    last 2 lines of launch.api's log:\n      | Traceback\n      | OSError\n    launch.redis's log is empty\n    last 1 lines of launch.web's log:\n      | listening\n"
	if !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant it to hold\n%s", got, want)
	}
}
