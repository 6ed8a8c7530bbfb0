package main

import (
	"strings"
	"testing"
	"time"

	"lockstep/runner/events"
	"lockstep/views"
)

// Off a terminal (a pipe, a file, CI) a run prints plain lines with no
// colour, whatever NO_COLOR says; --json prints JSON lines.
func TestNewViewOffATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	var out strings.Builder
	v, done := newView(runFlags{}, &out)
	if _, ok := v.(*views.Lines); !ok {
		t.Fatalf("not a terminal: want plain lines, got %T", v)
	}
	v.Emit(events.Event{Type: events.AttemptStarted, Time: time.Now(), Plan: "p", Attempt: 1})
	done()
	if got := out.String(); got != "lockstep: plan p, attempt 1\n" {
		t.Errorf("plain view printed %q", got)
	}
	v, done = newView(runFlags{json: true}, &out)
	defer done()
	if _, ok := v.(*views.JSONLines); !ok {
		t.Errorf("--json: want JSON lines, got %T", v)
	}
}
