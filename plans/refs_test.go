package plans_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"lockstep/plans"
)

// Parse analyses every expression once: what each step, condition, probe
// and attribute reads is on the plan, for the runner to use as it is.
func TestParseAnalysesReferences(t *testing.T) {
	src := `
variable "port" {
  type    = number
  default = 8080
}
locals {
  url  = "http://127.0.0.1:${var.port}"
  ping = "${local.url}/ping"
}
step "run" "build" {
  command = "make"
}
step "launch" "server" {
  command = "serve --port ${var.port} --rev ${step.run.build.stdout}"
  log     = "/tmp/server.log"
}
step "wait" "ready" {
  probe "http" "health" {
    url = local.ping
  }
  probe "port" "listen" {
    port = var.port
  }
  probe "log" "server" {
    step = step.launch.server
  }
  probe "process" "own" {
    pid = step.launch.server.pid
  }
  postcondition {
    condition     = probe.health.status == 200 && probe.listen.pgid == step.launch.server.pgid
    error_message = "health said ${probe.health.body}"
  }
  abort_if {
    condition = strcontains(probe.server["text"], "Traceback")
  }
}
step "run" "check" {
  command = "curl ${local.url}"
  postcondition {
    condition = self.exit_code == 0 && strcontains(self.stdout, "ok")
  }
}
`
	p, diags := plans.Parse("plan.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	texts := func(rs plans.Refs) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Text)
		}
		return out
	}
	if got := texts(p.Locals[1].Refs); !slices.Equal(got, []string{"local.url"}) {
		t.Errorf("local ping reads %q", got)
	}
	launch := p.Step("launch.server")
	if got := launch.Reads.Steps(); !slices.Equal(got, []string{"run.build"}) {
		t.Errorf("launch reads steps %q, want run.build", got)
	}
	if got := texts(launch.AttrRefs["command"]); !slices.Equal(got, []string{"var.port", "step.run.build.stdout"}) {
		t.Errorf("launch command reads %q", got)
	}
	if _, ok := launch.AttrRefs["timeout"]; ok {
		t.Error("an attribute not set has refs")
	}

	wait := p.Step("wait.ready")
	// The probe's own step = step.launch.server is the launch it follows,
	// not an output it reads; its pid and the condition's pgid are.
	if got := wait.Reads.Steps(); !slices.Equal(got, []string{"launch.server"}) {
		t.Errorf("wait reads steps %q, want launch.server", got)
	}
	cond := wait.Postconditions[0]
	if got := cond.Refs.Probes(); !slices.Equal(got, []string{"health", "listen"}) {
		t.Errorf("postcondition reads probes %q", got)
	}
	if got := texts(cond.MessageRefs); !slices.Equal(got, []string{"probe.health.body"}) {
		t.Errorf("error_message reads %q", got)
	}
	r := cond.Refs[0]
	if r.Root != "probe" || r.Name != "health" || r.Attr != "status" || r.Text != "probe.health.status" {
		t.Errorf("first ref %+v", r)
	}
	if got := texts(wait.AbortIfs[0].Refs); !slices.Equal(got, []string{`probe.server["text"]`}) {
		t.Errorf("abort_if reads %q", got)
	}
	reads := map[string]map[string]bool{}
	for _, pb := range wait.Probes {
		reads[pb.Name] = pb.Reads
	}
	want := map[string]map[string]bool{
		"health": {"status": true, "body": true}, // the error message reads body
		"listen": {"pgid": true},
		"server": nil, // read whole: by an index
		"own":    {},  // read by nothing
	}
	for name, w := range want {
		got := reads[name]
		if (got == nil) != (w == nil) || !maps.Equal(got, w) {
			t.Errorf("probe %s reads %v, want %v", name, got, w)
		}
	}
	if wait.Probes[3].ReadsSelf() {
		t.Error("a probe reading a step's pid reads self")
	}

	check := p.Step("run.check")
	if !check.Postconditions[0].Refs.ReadsSelf("exit_code") || check.Postconditions[0].Refs.ReadsSelf("stderr") {
		t.Errorf("self reads: %q", texts(check.Postconditions[0].Refs))
	}
	if got := check.Reads.Steps(); len(got) != 0 {
		t.Errorf("run.check reads steps %q", got)
	}
}

// A probe that reads self starts after its step acted.
func TestProbeReadsSelf(t *testing.T) {
	p, diags := plans.Parse("plan.hcl", []byte(`
step "launch" "server" {
  command = "serve"
  probe "process" "me" {
    pid = self.pid
  }
  probe "port" "p" {
    port = 80
  }
}
`))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	s := p.Steps[0]
	if !s.Probes[0].ReadsSelf() || s.Probes[1].ReadsSelf() {
		t.Errorf("ReadsSelf: me %v, p %v", s.Probes[0].ReadsSelf(), s.Probes[1].ReadsSelf())
	}
}

// self.metrics.NAME and step.benchmark.NAME.metrics.NAME name a metric the
// benchmark has: its metric blocks, or what its load reports; with repeat,
// one of values, median, min, max, stddev of it.
func TestMetricReferences(t *testing.T) {
	httpLoad := func(repeat int, cond string) string {
		return fmt.Sprintf(`step "benchmark" "load" {
  load "http" {
    url      = "http://127.0.0.1:8080/"
    requests = 10
  }
  repeat = %d
  postcondition {
    condition = %s
  }
}
`, repeat, cond)
	}
	openai := func(cond string) string {
		return fmt.Sprintf(`step "benchmark" "llm" {
  load "openai" {
    url = "http://127.0.0.1:8080/v1/chat/completions"
  }
  postcondition {
    condition = %s
  }
}
`, cond)
	}
	command := func(repeat int, cond string) string {
		return fmt.Sprintf(`step "benchmark" "cmd" {
  command = "./bench"
  repeat  = %d
  metric "rps" {
    regex = "rps: ([0-9.]+)"
  }
  metric "p99_ms" {
    regex = "p99: ([0-9.]+)"
  }
  postcondition {
    condition = %s
  }
}
`, repeat, cond)
	}
	later := func(cond string) string {
		return `step "assert" "after" {
  postcondition {
    condition = ` + cond + `
  }
}
`
	}
	for _, tc := range []struct {
		name, src string
		summary   string // "" when valid
		detail    string
		at        string // line:col of the error
	}{
		{"http load, a name it reports", httpLoad(1, "self.metrics.requests_per_s >= 100 && self.metrics.latency_p99_ms < 5"), "", "", ""},
		{"http load, a typo", httpLoad(1, "self.metrics.request_per_s >= 100"), "Unknown metric",
			`A load "http" reports no metric "request_per_s". Did you mean "requests_per_s"?`, "8:17"},
		{"http load, another load's name", httpLoad(1, "self.metrics.ttft_p99_ms < 5"), "Unknown metric", `no metric "ttft_p99_ms"`, "8:17"},
		{"http load, by a string index", httpLoad(1, `self.metrics["request_per_s"] >= 100`), "Unknown metric", `Did you mean "requests_per_s"?`, "8:17"},
		{"http load, repeated", httpLoad(3, "self.metrics.requests_per_s.median >= 100"), "", "", ""},
		{"http load, repeated, read whole", httpLoad(3, "length(self.metrics.requests_per_s.values) == 3"), "", "", ""},
		{"http load, repeated, a field typo", httpLoad(3, "self.metrics.requests_per_s.mediam >= 100"), "Unsupported attribute",
			`With repeat = 3, self.metrics.requests_per_s holds values, median, min, max and stddev, not "mediam". Did you mean "median"?`, "8:17"},
		{"http load, a field without repeat", httpLoad(1, "self.metrics.requests_per_s.median >= 100"), "Unsupported attribute",
			"self.metrics.requests_per_s is a number: its benchmark runs once", "8:17"},
		{"openai load", openai("self.metrics.ttft_p99_ms < 500 && self.metrics.output_tokens_per_s > 10"), "", "", ""},
		{"openai load, a typo", openai("self.metrics.output_token_per_s > 10"), "Unknown metric", `Did you mean "output_tokens_per_s"?`, "6:17"},
		{"command", command(1, "self.metrics.rps >= 100 && self.metrics.p99_ms < 5"), "", "", ""},
		{"command, a typo", command(1, "self.metrics.rsp >= 100"), "Reference to undeclared metric",
			`declares no metric "rsp". Did you mean "rps"? Its metrics are rps, p99_ms.`, "11:17"},
		{"command, repeated", command(3, "self.metrics.rps.median >= 100 && self.metrics.p99_ms.max < 5"), "", "", ""},
		{"command, the metrics whole", command(1, `length(keys(self.metrics)) == 2`), "", "", ""},
		{"a later step, a load's name", httpLoad(1, "true") + later("step.benchmark.load.metrics.requests_per_s > 1"), "", "", ""},
		{"a later step, a load's typo", httpLoad(1, "true") + later("step.benchmark.load.metrics.requests_per_sec > 1"), "Unknown metric",
			`Did you mean "requests_per_s"?`, "13:17"},
		{"a later step, a command's typo", command(3, "true") + later("step.benchmark.cmd.metrics.p95_ms.median < 5"), "Reference to undeclared metric",
			`Did you mean "p99_ms"?`, "16:17"},
		{"a later step, a repeat field typo", command(3, "true") + later("step.benchmark.cmd.metrics.rps.avg < 5"), "Unsupported attribute",
			`step.benchmark.cmd.metrics.rps holds values, median, min, max and stddev, not "avg"`, "16:17"},
		{"a command without metric blocks", `step "benchmark" "none" {
  command = "./bench"
  postcondition {
    condition = self.metrics.rps > 1
  }
}
`, "Reference to undeclared metric", `declares no metric blocks`, "4:17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := plans.Parse("plan.hcl", []byte(tc.src))
			var errs []string
			for _, d := range diags {
				if d.Severity == 1 { // hcl.DiagError
					errs = append(errs, fmt.Sprintf("%d:%d %s: %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail))
				}
			}
			if tc.summary == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got:\n%s", strings.Join(errs, "\n"))
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
			}
			if want := tc.at + " " + tc.summary + ": "; !strings.HasPrefix(errs[0], want) || !strings.Contains(errs[0], tc.detail) {
				t.Errorf("got  %s\nwant %s...%s", errs[0], want, tc.detail)
			}
		})
	}
}

// A probe gathers what its own step's conditions read of it, not what
// an earlier step's read of a probe of the same name.
func TestProbeReadsPerStep(t *testing.T) {
	p, diags := plans.Parse("plan.hcl", []byte(`
step "wait" "a" {
  probe "http" "p" {
    url = "http://127.0.0.1:1"
  }
  postcondition {
    condition = probe.p.status == 200
  }
}
step "wait" "b" {
  probe "http" "p" {
    url = "http://127.0.0.1:1"
  }
  postcondition {
    condition = strcontains(probe.p.body, "ok")
  }
}
`))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for i, want := range []map[string]bool{{"status": true}, {"body": true}} {
		if got := p.Steps[i].Probes[0].Reads; !maps.Equal(got, want) {
			t.Errorf("%s's probe reads %v, want %v", p.Steps[i].Addr(), got, want)
		}
	}
}
