package plans_test

import (
	"strings"
	"testing"

	"lockstep/plans"
)

const partPlan = `
plan "p" {}

step "run" "prepare" {
  command = "true"
}

step "launch" "server" {
  command = "sleep 600"
}

step "wait" "ready" {
  probe "log" "server" {
    step = step.launch.server
  }
  postcondition {
    condition = strcontains(probe.server.text, "ready")
  }
}

step "assert" "pid" {
  postcondition {
    condition = step.launch.server.pid > 0
  }
}

step "benchmark" "load" {
  command = "echo rps=1"
  metric "rps" {
    regex = "rps=(\\d+)"
  }
}

step "run" "server" {
  command = "true"
}
`

func TestPartOf(t *testing.T) {
	p, diags := plans.Parse("part.hcl", []byte(partPlan))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	modes := func(part plans.Part) string {
		var out []string
		for _, st := range p.Steps {
			out = append(out, st.Addr()+"="+map[plans.StepMode]string{plans.RunStep: "run", plans.Reconfirm: "again", plans.Leave: "left"}[part.Mode(st.Addr())])
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		from    string
		only    []string
		want    string
		wantErr string
	}{
		{want: "run.prepare=run launch.server=run wait.ready=run assert.pid=run benchmark.load=run run.server=run"},
		{from: "benchmark.load", want: "run.prepare=again launch.server=again wait.ready=again assert.pid=again benchmark.load=run run.server=run"},
		{from: "load", want: "run.prepare=again launch.server=again wait.ready=again assert.pid=again benchmark.load=run run.server=run"},
		// A log probe's step and an output read are what the named steps
		// read: re-confirmed; the rest is left out.
		{only: []string{"ready"}, want: "run.prepare=left launch.server=again wait.ready=run assert.pid=left benchmark.load=left run.server=left"},
		{only: []string{"pid", "load"}, want: "run.prepare=left launch.server=again wait.ready=left assert.pid=run benchmark.load=run run.server=left"},
		{from: "benchmark.laod", wantErr: `part.hcl has no step "benchmark.laod"; did you mean "benchmark.load"?`},
		{from: "server", wantErr: `"server" names 2 steps of part.hcl (launch.server, run.server): write KIND.NAME`},
		{only: []string{"redy"}, wantErr: `did you mean "ready"?`},
		{from: "load", only: []string{"pid"}, wantErr: "--from and --only cannot go together"},
	} {
		part, err := p.PartOf(tc.from, tc.only)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("PartOf(%q, %q) = %v, want an error with %q", tc.from, tc.only, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("PartOf(%q, %q): %v", tc.from, tc.only, err)
		case modes(part) != tc.want:
			t.Errorf("PartOf(%q, %q) =\n  %s\nwant\n  %s", tc.from, tc.only, modes(part), tc.want)
		}
	}
}
