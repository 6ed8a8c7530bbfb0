package runner_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

type collect struct {
	mu sync.Mutex
	ev []events.Event
}

func (c *collect) Emit(e events.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ev = append(c.ev, e)
}

func (c *collect) finished(addr string) *events.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.ev {
		if e.Type == events.StepFinished && e.Step.Addr == addr {
			return e.Outcome
		}
	}
	return nil
}

// onFirst runs do once, on the first event that matches: a test acts on
// what the run has reached, not on how long it has been going.
type onFirst struct {
	collect
	match func(events.Event) bool
	do    func()
	once  sync.Once
}

func (o *onFirst) Emit(e events.Event) {
	o.collect.Emit(e)
	if o.match(e) {
		o.once.Do(o.do)
	}
}

// runPlan runs src in a fresh directory and returns the result and events.
func runPlan(t *testing.T, ctx context.Context, src string, vars ...string) (runner.Result, *collect) {
	t.Helper()
	c := &collect{}
	return runPlanWith(t, ctx, c, src, vars...), c
}

// runPlanWith runs src in a fresh directory with obs for its observer.
func runPlanWith(t *testing.T, ctx context.Context, obs events.Observer, src string, vars ...string) runner.Result {
	t.Helper()
	return runSource(t, ctx, obs, src, vars, nil)
}

// runSource runs src in a fresh directory, its targets local, with obs
// for its observer; edit, when given, changes the options (a fleet's
// hosts) once the plan is parsed and resolved.
func runSource(t *testing.T, ctx context.Context, obs events.Observer, src string, vars []string, edit func(*runner.Options)) runner.Result {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	p, diags := plans.ParseFile(path)
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{Vars: vars})
	if diags.HasErrors() {
		t.Fatalf("resolve: %s", diags.Error())
	}
	o := runner.Options{
		Plan:      p,
		Scope:     scope,
		Targets:   func(string, func(events.Event)) (targets.Target, error) { return targets.NewLocal(), nil },
		Observer:  obs,
		Attempt:   1,
		LogDir:    filepath.Join(dir, "logs"),
		StopGrace: time.Second,
	}
	if edit != nil {
		edit(&o)
	}
	return runner.Run(ctx, o)
}

func TestRunConfirmsAndStops(t *testing.T) {
	res, c := runPlan(t, context.Background(), `
plan "ok" {}
variable "word" {
  type    = string
  default = "hello"
}
step "run" "make" {
  command = "echo ${shellquote(var.word)} > out.txt"
}
step "launch" "server" {
  command = "echo starting; sleep 0.3; echo ready; sleep 60"
  grace   = "100ms"
}
step "wait" "ready" {
  timeout = "10s"
  probe "log" "server" {
    step = step.launch.server
  }
  probe "file" "out" {
    path = "out.txt"
  }
  postcondition {
    condition = strcontains(probe.server.text, "ready")
  }
  postcondition {
    condition = probe.out.content == "hello\n"
  }
}
step "assert" "pid" {
  probe "process" "server" {
    step = step.launch.server
  }
  postcondition {
    condition = probe.server.alive && step.launch.server.pid > 0
  }
}
`)
	if res.Status != events.Confirmed {
		for _, e := range c.ev {
			t.Logf("%+v", e)
		}
		t.Fatalf("status %s, failed %s", res.Status, res.Failed)
	}
	var stopped bool
	for _, e := range c.ev {
		if e.Type == events.ProcessStopped && e.Cleanup.Result == "stopped" {
			stopped = true
		}
	}
	if !stopped {
		t.Error("the launched process was not reported stopped")
	}
}

func TestWaitFailsAtOnceWhenLaunchDies(t *testing.T) {
	start := time.Now()
	res, c := runPlan(t, context.Background(), `
plan "dies" {}
step "launch" "server" {
  command = "sleep 0.5; echo boom; exit 4"
  grace   = "100ms"
}
step "wait" "ready" {
  timeout = "5m"
  probe "file" "never" {
    path = "never"
  }
  postcondition {
    condition = probe.never.exists
  }
}
`)
	if res.Status != events.Failed || res.Failed != "wait.ready" {
		t.Fatalf("got %s at %s", res.Status, res.Failed)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("took %s: the wait did not fail at once", el)
	}
	o := c.finished("wait.ready")
	if !strings.Contains(o.Reason, "exited with status 4") {
		t.Errorf("reason %q", o.Reason)
	}
	if tail := o.Evidence.LogTail["launch.server"]; len(tail) == 0 || tail[len(tail)-1] != "boom" {
		t.Errorf("log tail %q", tail)
	}
}

func TestNotYetKeepsReason(t *testing.T) {
	res, c := runPlan(t, context.Background(), `
plan "refused" {}
step "wait" "health" {
  timeout  = "600ms"
  interval = "100ms"
  probe "http" "h" {
    url = "http://127.0.0.1:1/health"
  }
  postcondition {
    condition = probe.h.status == 200
  }
}
`)
	if res.Status != events.Failed {
		t.Fatalf("status %s", res.Status)
	}
	o := c.finished("wait.health")
	if o.Status != events.TimedOut {
		t.Fatalf("step status %s", o.Status)
	}
	if len(o.Evidence.Conditions) != 1 || o.Evidence.Conditions[0].State != events.CondNotYet || !strings.Contains(o.Evidence.Conditions[0].Reason, "connection refused") {
		t.Fatalf("evidence %+v", o.Evidence.Conditions)
	}
}

func TestInterruptStopsProcesses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The interrupt comes once the wait has polled, the launch running.
	c := &onFirst{
		match: func(e events.Event) bool { return e.Type == events.Observed && e.Step.Addr == "wait.forever" },
		do:    cancel,
	}
	res := runPlanWith(t, ctx, c, `
plan "int" {}
step "launch" "server" {
  command = "sleep 3991 & sleep 3992"
  grace   = "100ms"
}
step "wait" "forever" {
  probe "file" "f" {
    path = "nope"
  }
  postcondition {
    condition = probe.f.exists
  }
}
step "run" "after" {
  command = "echo after > after.txt"
  always  = true
}
`)
	if res.Status != events.Interrupted || res.ExitCode() != 130 {
		t.Fatalf("status %s", res.Status)
	}
	if o := c.finished("run.after"); o == nil || o.Status != events.Confirmed {
		t.Fatalf("always step: %+v", o)
	}
	// The launch's group, not every such sleep on the machine: another
	// run of this test may be under way.
	var pgid int
	for _, e := range c.ev {
		if e.Type == events.StepAction && e.Step.Addr == "launch.server" && e.Action.PGID > 0 {
			pgid = e.Action.PGID
		}
	}
	if pgid == 0 {
		t.Fatal("no launch.server action with its process group")
	}
	ps, err := targets.NewLocal().Processes(context.Background(), "sleep 399[12]")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.PGID == pgid && p.State != "Z" {
			t.Errorf("left running: %+v", p)
		}
	}
}

func osWriteFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }

// A probe may read self: a process probe on the pid the launch got.
func TestProbeReadsSelf(t *testing.T) {
	res, c := runPlan(t, context.Background(), `
plan "self" {}
step "launch" "server" {
  command = "exec sleep 60"
  grace   = "100ms"
  probe "process" "me" {
    pid = self.pid
  }
  postcondition {
    condition = probe.me.alive && probe.me.pids[0] == self.pid
  }
}
`)
	if res.Status != events.Confirmed {
		t.Fatalf("status %s: %+v", res.Status, c.finished("launch.server"))
	}
}

// A timeout that lands while a probe runs is judged on the last complete
// observation: the error_message and the values stay.
func TestTimeoutDuringProbeKeepsEvidence(t *testing.T) {
	_, c := runPlan(t, context.Background(), `
plan "e" {}
step "wait" "w" {
  timeout  = "1s"
  interval = "100ms"
  probe "exec" "slow" {
    command = "sleep 0.3; echo busy"
  }
  postcondition {
    condition     = trimspace(probe.slow.stdout) == "free"
    error_message = "the resource is still busy"
  }
}
`)
	o := c.finished("wait.w")
	if o.Status != events.TimedOut || o.ErrorMessage != "the resource is still busy" {
		t.Fatalf("outcome %s %q %q", o.Status, o.Reason, o.ErrorMessage)
	}
	if got := o.Evidence.Values["probe.slow.stdout"]; got != `"busy\n"` {
		t.Errorf("probe.slow.stdout = %s, want the last complete value", got)
	}
}

func TestAbortIfFailsTheStepAtOnce(t *testing.T) {
	start := time.Now()
	res, c := runPlan(t, context.Background(), `
plan "abort" {}
step "run" "mark" {
  command = "echo FATAL > marker"
}
step "wait" "ready" {
  timeout  = "30s"
  interval = "100ms"
  probe "file" "m" {
    path = "marker"
  }
  abort_if {
    condition     = probe.m.exists
    error_message = "the marker says the server gave up"
  }
  postcondition {
    condition = probe.m.size > 1000000
  }
}
`)
	if res.Status != events.Failed {
		t.Fatalf("status %s", res.Status)
	}
	o := c.finished("wait.ready")
	if o.Status != events.Aborted || o.Reason != "abort_if held: probe.m.exists" || o.ErrorMessage != "the marker says the server gave up" {
		t.Fatalf("outcome %s %q %q", o.Status, o.Reason, o.ErrorMessage)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s: an abort_if that holds must not wait for the timeout", d)
	}
}

// A signal that comes between two steps, or before the first, stops the
// run there: no later step runs as if nothing happened (only the always
// ones), and the attempt ends interrupted with the signal's reason.
func TestInterruptBetweenSteps(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupted by SIGTERM (asked to terminate)"))
	res, c := runPlan(t, ctx, `
plan "between" {}
step "run" "first" {
  command = "touch first-ran"
}
step "run" "report" {
  command = "touch report-ran"
  always  = true
}
`)
	if res.Status != events.Interrupted || res.ExitCode() != 130 {
		t.Fatalf("result %+v", res)
	}
	if o := c.finished("run.first"); o == nil || o.Status != events.Skipped || o.Reason != "the run was interrupted by SIGTERM (asked to terminate) before this step" {
		t.Errorf("run.first: %+v", o)
	}
	if _, err := os.Stat("first-ran"); err == nil {
		t.Error("a step ran after the interrupt")
	}
	if o := c.finished("run.report"); o == nil || o.Status != events.Confirmed {
		t.Errorf("the always step: %+v", o)
	}
	for _, e := range c.ev {
		if e.Type == events.AttemptFinished && e.Outcome.Reason != "interrupted by SIGTERM (asked to terminate)" {
			t.Errorf("attempt reason %q", e.Outcome.Reason)
		}
	}
}

// A load cut short by the step's timeout keeps what it measured, marked
// partial: the server answers three requests, then hangs.
func TestTimedOutLoadKeepsPartialMetrics(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 3 {
			<-r.Context().Done()
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	res, c := runPlan(t, context.Background(), `
plan "hang" {}
step "benchmark" "load" {
  timeout = "500ms"
  load "http" {
    url         = "`+srv.URL+`/"
    concurrency = 1
    duration    = "10m"
  }
  postcondition {
    condition = self.metrics.requests_per_s > 0
  }
}
`)
	o := c.finished("benchmark.load")
	if res.Status != events.Failed || o == nil || o.Status != events.TimedOut {
		t.Fatalf("result %+v, outcome %+v", res, o)
	}
	if !o.Partial || o.Metrics["requests"] != 3 || o.Metrics["errors"] != 0 {
		t.Errorf("partial %v, metrics %v; want the 3 answered requests, partial", o.Partial, o.Metrics)
	}
}
