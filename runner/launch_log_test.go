package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

// racingTarget creates a file at the log path just before the first
// Start, as another launch writing there would between the move aside and
// the start.
type racingTarget struct {
	*targets.Local
	raced bool
}

func (r *racingTarget) Start(ctx context.Context, c targets.Command, log string) (targets.Process, error) {
	if !r.raced {
		r.raced = true
		os.WriteFile(log, []byte("another launch's line\n"), 0o644)
	}
	return r.Local.Start(ctx, c, log)
}

// A launch never shares its log: when another launch made a file at the
// path after it was moved aside, that file is moved aside too and the
// launch starts with a file of its own.
func TestLaunchStartsWithItsOwnLog(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	src := `
step "launch" "server" {
  command = "echo mine; exec sleep 100"
  log     = "server.log"
  grace   = "10ms"
  postcondition {
    condition = strcontains(self.log, "mine")
  }
  abort_if {
    condition = strcontains(self.log, "another")
    error_message = "read another launch's line"
  }
}
`
	path := filepath.Join(dir, "plan.hcl")
	os.WriteFile(path, []byte(src), 0o600)
	p, diags := plans.ParseFile(path)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	tg := &racingTarget{Local: targets.NewLocal()}
	c := &collect{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runner.Run(ctx, runner.Options{
		Plan: p, Scope: scope, Observer: c, Attempt: 1, StopGrace: time.Second,
		Targets: func(string, func(events.Event)) (targets.Target, error) { return tg, nil },
	})
	if out := c.finished("launch.server"); out == nil || out.Status != events.Confirmed {
		t.Fatalf("launch: %+v", out)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "server.log.prev-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %q; want the other launch's file", aside)
	}
	if b, _ := os.ReadFile(aside[0]); !strings.Contains(string(b), "another") {
		t.Errorf("moved aside %q holds %q", aside[0], b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "server.log")); string(b) != "mine\n" {
		t.Errorf("the launch's log holds %q", b)
	}
}
