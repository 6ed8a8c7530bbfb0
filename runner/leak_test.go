package runner_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets/sshtest"
)

// connCounter counts a server's open connections, and tells when none is.
type connCounter struct {
	mu       sync.Mutex
	open     int
	accepted int
	changed  chan struct{} // closed and replaced on every change
}

func newConnCounter() *connCounter { return &connCounter{changed: make(chan struct{})} }

func (c *connCounter) hook(_ net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch st {
	case http.StateNew:
		c.open++
		c.accepted++
	case http.StateClosed, http.StateHijacked:
		c.open--
	default:
		return
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitClosed waits until no connection is open; it returns how many still
// are after limit. The limit is far below the 30 s a kept-alive idle
// connection would stay.
func (c *connCounter) waitClosed(limit time.Duration) int {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		open, changed := c.open, c.changed
		c.mu.Unlock()
		if open == 0 {
			return 0
		}
		select {
		case <-changed:
		case <-deadline.C:
			return open
		}
	}
}

func (c *connCounter) counts() (open, accepted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.accepted
}

func startCountedServer(t *testing.T) (*httptest.Server, *connCounter) {
	t.Helper()
	cc := newConnCounter()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	srv.Config.ConnState = cc.hook
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cc
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// fdPeak records the most file descriptors open as steps finish.
type fdPeak struct {
	collect
	t    *testing.T
	peak int
}

func (p *fdPeak) Emit(e events.Event) {
	p.collect.Emit(e)
	if e.Type == events.StepFinished {
		p.peak = max(p.peak, openFDs(p.t))
	}
}

// A plan of 1,000 steps, each with an http probe, ends with the file
// descriptors it started with, and never holds more than a few: the
// probes share one pool per target, and no connection outlives its step.
func TestHTTPProbesLeaveNoDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 steps")
	}
	srv, cc := startCountedServer(t)
	// The runtime's poller and the like exist before the count starts.
	warm := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := warm.Get(srv.URL); err == nil {
		resp.Body.Close()
	}
	if n := cc.waitClosed(10 * time.Second); n != 0 {
		t.Fatalf("%d connections still open before the run", n)
	}

	const steps = 1000
	var b strings.Builder
	b.WriteString("plan \"many\" {}\n")
	for i := range steps {
		fmt.Fprintf(&b, `
step "assert" "s%d" {
  probe "http" "h" {
    url = %q
  }
  postcondition {
    condition = probe.h.status == 200 && probe.h.body == "ok"
  }
}
`, i, srv.URL)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.hcl")
	p, diags := plans.Parse(path, []byte(b.String()))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}

	before := openFDs(t)
	obs := &fdPeak{t: t}
	res := runner.Run(context.Background(), runner.Options{
		Plan: p, Scope: scope, Observer: obs, StopGrace: time.Second,
		Targets: runner.OpenTarget(p, scope),
	})
	if res.Status != events.Confirmed {
		t.Fatalf("status %s at %s", res.Status, res.Failed)
	}
	// The server closes its side once the client closed its own.
	stillOpen := cc.waitClosed(10 * time.Second)
	after := openFDs(t)
	_, accepted := cc.counts()
	t.Logf("%d steps: %d descriptors before, at most %d as steps finished, %d after; %d connections accepted, %d still open", steps, before, obs.peak, after, accepted, stillOpen)
	if stillOpen != 0 {
		t.Errorf("%d connections the probes opened are still open after the run", stillOpen)
	}
	if after != before {
		t.Errorf("%d descriptors open after the run, %d before", after, before)
	}
	// Two per connection in this process (the probe's and the server's),
	// one connection per step at a time, and a little slack for the
	// runtime.
	if obs.peak > before+8 {
		t.Errorf("%d descriptors open as a step finished, %d before the run: connections pile up", obs.peak, before)
	}
}

// checkOnStart waits, as the named step starts, for the server to have no
// connection open, and keeps how many still were.
type checkOnStart struct {
	collect
	step      string
	cc        *connCounter
	stillOpen int
	checked   bool
}

func (c *checkOnStart) Emit(e events.Event) {
	c.collect.Emit(e)
	if e.Type == events.StepStarted && e.Step.Addr == c.step {
		c.stillOpen, c.checked = c.cc.waitClosed(10*time.Second), true
	}
}

// On an SSH target an http probe's connection is a forwarded channel
// (direct-tcpip) to the host's loopback: none stays open after the step
// that used it, while the SSH connection itself lives on.
func TestSSHForwardedConnectionsCloseWithTheirStep(t *testing.T) {
	sshd := sshtest.StartSSHD(t)
	srv, cc := startCountedServer(t)
	dir := t.TempDir()
	src := fmt.Sprintf(`
plan "fwd" {}
%sstep "wait" "health" {
  target   = target.box
  timeout  = "30s"
  interval = "50ms"
  probe "http" "h" {
    url = %q
  }
  probe "port" "p" {
    port = %d
  }
  postcondition {
    condition = probe.h.status == 200 && probe.p.open
  }
}
step "run" "after" {
  target  = target.box
  command = "true"
}
`, boxTarget(t, sshd, sshd.Port), srv.URL+"/health", srv.Listener.Addr().(*net.TCPAddr).Port)
	p, diags := plans.Parse(filepath.Join(dir, "plan.hcl"), []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	obs := &checkOnStart{step: "run.after", cc: cc}
	res := runner.Run(context.Background(), runner.Options{
		Plan: p, Scope: scope, Observer: obs, StopGrace: time.Second,
		Targets: runner.OpenTarget(p, scope),
	})
	if res.Status != events.Confirmed {
		for _, e := range obs.ev {
			if e.Outcome != nil {
				t.Logf("%s %s: %s %s", e.Type, addr(e), e.Outcome.Status, e.Outcome.Reason)
			}
		}
		t.Fatalf("status %s at %s", res.Status, res.Failed)
	}
	_, accepted := cc.counts()
	if !obs.checked || accepted == 0 {
		t.Fatalf("checked %v, %d connections accepted: the probes did not reach the server", obs.checked, accepted)
	}
	t.Logf("%d forwarded connections accepted, %d still open when the next step started", accepted, obs.stillOpen)
	if obs.stillOpen != 0 {
		t.Errorf("%d forwarded connections still open after the step that used them", obs.stillOpen)
	}
}
