package runner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets/sshtest"
)

// The SSH connection is cut while a wait polls: the wait reconnects and
// confirms within its deadline, and the launched process, which kept
// running on the host, is not taken for dead.
func TestWaitSurvivesDroppedConnection(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	proxy := sshtest.StartProxy(t, srv.Addr())
	dir := t.TempDir()
	flag := filepath.Join(dir, "flag")
	src := fmt.Sprintf(`
plan "drop" {}
%sstep "launch" "server" {
  target  = target.box
  command = "exec sleep 60"
  log     = %q
  grace   = "100ms"
}
step "wait" "flag" {
  target   = target.box
  timeout  = "30s"
  interval = "200ms"
  probe "file" "flag" {
    path = %q
  }
  postcondition {
    condition = probe.flag.exists
  }
}
`, boxTarget(t, srv, proxy.Port()), filepath.Join(dir, "server.log"), flag)
	p, diags := plans.Parse(filepath.Join(dir, "plan.hcl"), []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	// Once the wait has polled and seen no flag, the connection is cut
	// and the flag appears: only a poll over a new connection can see it.
	obs := &onFirst{
		match: func(e events.Event) bool { return e.Type == events.Observed && e.Step.Addr == "wait.flag" },
		do: func() {
			proxy.Sever()
			if err := writeFile(flag, "up"); err != nil {
				t.Error(err)
			}
		},
	}
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
	if n := proxy.Accepted(); n < 2 {
		t.Errorf("the proxy took %d connections: the cut did not force a reconnect", n)
	}
	var stopped bool
	for _, e := range obs.ev {
		if e.Type == events.ProcessStopped && e.Cleanup.Result == "stopped" {
			stopped = true
		}
	}
	if !stopped {
		t.Error("the launched process was not found running and stopped at the end")
	}
}

func addr(e events.Event) string {
	if e.Step == nil {
		return ""
	}
	return e.Step.Addr
}

// knownHostsFor writes a known_hosts file naming the server's key at the
// proxy's port, where the client believes the host is.
// boxTarget is the HCL of a target "box" reaching srv's sshd through port
// (its own, or a proxy's), trusting its host key there.
func boxTarget(t *testing.T, srv *sshtest.Server, port int) string {
	return fmt.Sprintf(`target "box" {
  ssh {
    host          = "127.0.0.1"
    port          = %d
    user          = %q
    identity_file = %q
    known_hosts   = %q
  }
}
`, port, srv.User, srv.UserKey, knownHostsFor(t, srv, port))
}

func knownHostsFor(t *testing.T, srv *sshtest.Server, port int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "known_hosts")
	line := sshtest.KnownHostsLine("127.0.0.1", port, srv.HostKey)
	if err := writeFile(path, line); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(path, text string) error {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return osWriteFile(path, []byte(text))
}
