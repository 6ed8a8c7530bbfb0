package runner_test

import (
	"context"
	"strings"
	"testing"

	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

// runFleet runs src with its fleet target "fleet" opened as one local
// target per host (each its own, as each host of a real fleet is): the
// fleet step's machinery, rule and outputs without network namespaces
// (the fleet_*.txtar scripts run it against real hosts).
func runFleet(t *testing.T, src string) (runner.Result, *collect) {
	t.Helper()
	c := &collect{}
	res := runSource(t, context.Background(), c, src, nil, func(o *runner.Options) {
		o.Fleets = func(name string, _ func(events.Event)) ([]runner.FleetHost, error) {
			hs, err := o.Scope.FleetHosts(o.Plan.Target(name))
			var out []runner.FleetHost
			for _, h := range hs {
				out = append(out, runner.FleetHost{Name: h, Target: targets.NewLocal()})
			}
			return out, err
		}
	})
	return res, c
}

const fleetTarget = `
target "fleet" {
  ssh {
    hosts = ["a", "b", "c", "d"]
  }
}
`

func TestFleetRule(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		want       events.Status
		reason     string
	}{
		{"every host by default", "", events.Failed, "1 of 4 hosts did not confirm (b), the step allows no host to fail; b: "},
		{"max_failures", "max_failures = 1", events.Confirmed, "confirmed on 3 of 4 hosts; b did not, and the step allows 1 to fail (max_failures = 1)"},
		{"min_confirmed makes max_failures", "min_confirmed = 3", events.Confirmed, "confirmed on 3 of 4 hosts"},
		{"min_confirmed above", "min_confirmed = 4", events.Failed, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, c := runFleet(t, fleetTarget+`
step "run" "each" {
  target  = target.fleet
  `+tc.rule+`
  command = "echo ${target.host} ${target.rank} ${length(target.hosts)}; test ${target.rank} != 1"
}
`)
			out := c.finished("run.each")
			if out == nil || out.Status != tc.want || !strings.Contains(out.Reason, tc.reason) {
				t.Fatalf("run.each = %+v, want %s with %q", out, tc.want, tc.reason)
			}
			if len(out.Hosts) != 4 {
				t.Fatalf("hosts = %+v", out.Hosts)
			}
			for i, h := range out.Hosts {
				if h.Rank != i || h.Host != string(rune('a'+i)) {
					t.Errorf("host %d = %s rank %d", i, h.Host, h.Rank)
				}
				if h.Host == "b" && h.Status.OK() || h.Host != "b" && !h.Status.OK() && !strings.HasPrefix(h.Reason, "stopped: ") {
					t.Errorf("%s: %s %s", h.Host, h.Status, h.Reason)
				}
			}
			if tc.want == events.Confirmed && res.Status != events.Confirmed || tc.want != events.Confirmed && res.Failed != "run.each" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestFleetLeaderFirstAndOutputs(t *testing.T) {
	res, c := runFleet(t, fleetTarget+`
step "launch" "server" {
  target       = target.fleet
  leader_first = true
  grace        = "200ms"
  command      = "echo rank ${target.rank} up; exec sleep 60"
}
step "wait" "logs" {
  target = target.fleet
  probe "log" "own" {
    step = step.launch.server
  }
  postcondition {
    condition = strcontains(probe.own.text, "rank ${target.rank} up") && step.launch.server[target.rank].host == target.host
  }
}
step "assert" "outputs" {
  postcondition {
    condition = length(distinct(step.launch.server[*].pid)) == 4 && byhost(step.launch.server)["c"].rank == 2
  }
}
`)
	if res.Status != events.Confirmed {
		t.Fatalf("result %+v: %+v", res, c.finished(res.Failed))
	}
	// Rank 0 started, and confirmed, before any other host acted.
	c.mu.Lock()
	defer c.mu.Unlock()
	var order []string
	for _, e := range c.ev {
		if e.Step != nil && e.Step.Addr == "launch.server" && (e.Type == events.HostFinished || e.Type == events.StepAction && e.Host != "") {
			order = append(order, string(e.Type)+" "+e.Host)
		}
	}
	if len(order) < 2 || order[0] != "step_action a" || order[1] != "host_finished a" {
		t.Errorf("launch order: %v", order)
	}
	stopped := 0
	for _, e := range c.ev {
		if e.Type == events.ProcessStopped && e.Host != "" && e.Cleanup.Result == "stopped" {
			stopped++
		}
	}
	if stopped != 4 {
		t.Errorf("%d of 4 hosts' launches stopped", stopped)
	}
}

// A launch that dies on one host fails that host, at once, and no other.
func TestFleetDeathOnOneHost(t *testing.T) {
	_, c := runFleet(t, fleetTarget+`
step "launch" "server" {
  target  = target.fleet
  grace   = "100ms"
  command = "exec sleep 60"
}
step "wait" "never" {
  target       = target.fleet
  timeout = "1m"
  probe "exec" "kill" {
    command = "[ ${target.rank} = 3 ] && kill ${step.launch.server[target.rank].pid}; exit 0"
  }
  postcondition {
    condition = probe.kill.exit_code == 1
  }
}
`)
	out := c.finished("wait.never")
	if out == nil || out.Status != events.Failed || !strings.Contains(out.Reason, "(d), the step allows no host to fail; d: launch.server (pid ") {
		t.Fatalf("wait.never = %+v", out)
	}
	for _, h := range out.Hosts {
		if h.Host != "d" && !strings.HasPrefix(h.Reason, "stopped: d did not confirm") {
			t.Errorf("%s: %s %s", h.Host, h.Status, h.Reason)
		}
	}
}
