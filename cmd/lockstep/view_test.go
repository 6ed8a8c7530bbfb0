package main

import (
	"strings"
	"testing"
	"time"

	"lockstep/runner/events"
)

// The live view draws the step in progress on one line: elapsed against
// the timeout, a progress bar with the percentage, and the log's last
// line; a finished step becomes a permanent line and the status line is
// cleared.
func TestLiveViewDrawsProgress(t *testing.T) {
	var out strings.Builder
	v := &liveView{w: &out, s: style{}, width: func() int { return 200 }}
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

// Colour only on a terminal, never with NO_COLOR.
func TestStyleHonoursNoColor(t *testing.T) {
	if got := (style{color: false}).red("x"); got != "x" {
		t.Errorf("uncoloured style wrapped: %q", got)
	}
	t.Setenv("NO_COLOR", "1")
	v, done := newView(runFlags{}, &strings.Builder{})
	defer done()
	if lv, ok := v.(*lineView); !ok || lv.s.color {
		t.Errorf("not a terminal or NO_COLOR: want plain uncoloured lines, got %T %+v", v, v)
	}
}
