package steps_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/steps"
)

func TestKindsAreDistinctAndTheirDefaultsDecode(t *testing.T) {
	var names []string
	for _, k := range steps.Kinds() {
		names = append(names, k.Name)
		cfg, err := k.Decode(nil)
		if err != nil {
			t.Errorf("%s: its defaults do not decode: %v", k.Name, err)
			continue
		}
		// A fresh config each time: a run changing one (progress) does
		// not change the next step's defaults.
		cfg.Step().Timeout = 1
		if k.Defaults().Step().Timeout == 1 {
			t.Errorf("%s: Defaults shares its config", k.Name)
		}
		if attrs := schema.Attrs(k.Defaults()); len(attrs) < 7 || attrs[0].Name != "target" {
			t.Errorf("%s: attributes %v", k.Name, attrs)
		}
	}
	if strings.Join(names, " ") != "run launch wait assert benchmark" {
		t.Errorf("kinds %v", names)
	}
	if _, ok := steps.Lookup("deploy"); ok {
		t.Error("Lookup found a kind that is not")
	}
}

func TestDecodeRefusesWhatValidateRefuses(t *testing.T) {
	launch, _ := steps.Lookup("launch")
	bench, _ := steps.Lookup("benchmark")
	for _, c := range []struct {
		kind steps.Kind
		attr string
		v    cty.Value
		want string
	}{
		{launch, "timeout", cty.StringVal("5d"), `"5d" is not a duration`},
		{launch, "timeout", cty.StringVal("0s"), `timeout must be longer than zero, not "0s"`},
		{launch, "interval", cty.NumberIntVal(5), `interval must be a string such as "90s"`},
		{launch, "grace", cty.StringVal("-1s"), `grace cannot be negative ("-1s")`},
		{bench, "repeat", cty.NumberIntVal(0), "repeat must be a whole number from 1 to 1000."},
		{bench, "repeat", cty.NumberFloatVal(1.5), "repeat must be a whole number from 1 to 1000."},
		{bench, "progress", cty.StringVal("half"), "progress must be a number"},
	} {
		_, err := c.kind.Decode(map[string]cty.Value{c.attr: c.v})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s = %#v: %v, want %q", c.kind.Name, c.attr, c.v, err, c.want)
		}
	}
	cfg, err := launch.Decode(map[string]cty.Value{"grace": cty.StringVal("0s"), "target": cty.StringVal("gpu")})
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.(*steps.LaunchConfig); l.Grace != 0 || l.Target != "gpu" {
		t.Errorf("decoded %+v", l)
	}
	if shown := schema.Shown(cfg); shown["grace"] != "" || shown["target"] != "target.gpu" || shown["timeout"] != "2m" {
		t.Errorf("shown %v", shown)
	}
}

func TestKindsJudgeTheirOwnConditions(t *testing.T) {
	run, _ := steps.Lookup("run")
	cfg := run.Defaults()
	conds := cfg.Conditions(steps.Observed{Self: map[string]cty.Value{"exit_code": cty.NumberIntVal(3)}})
	if len(conds) != 1 || conds[0].State != events.CondFalse || conds[0].Reason != "the command exited with status 3" {
		t.Errorf("run exited 3: %+v", conds)
	}
	if c := cfg.Conditions(steps.Observed{Self: map[string]cty.Value{"exit_code": cty.Zero}}); c[0].State != events.CondHeld {
		t.Errorf("run exited 0: %+v", c)
	}
	if c := cfg.Conditions(steps.Observed{ReadsSelf: func(n string) bool { return n == "exit_code" }}); c != nil {
		t.Errorf("the plan reads self.exit_code, the kind still judges it: %+v", c)
	}

	launch, _ := steps.Lookup("launch")
	l := launch.Defaults()
	alive := map[string]cty.Value{"alive": cty.True}
	for _, c := range []struct {
		o    steps.Observed
		want events.CondState
	}{
		{steps.Observed{Self: alive, Elapsed: time.Second}, events.CondNotYet},
		{steps.Observed{Self: alive, Elapsed: 2 * time.Second}, events.CondHeld},
		{steps.Observed{Self: map[string]cty.Value{"alive": cty.False}, Elapsed: time.Hour}, events.CondFalse},
		{steps.Observed{Self: alive, Elapsed: time.Hour, Following: "waiting for the pid file"}, events.CondNotYet},
		// The last look failed (a host not answering): never confirmed
		// on the look before it.
		{steps.Observed{Self: map[string]cty.Value{"alive": cty.UnknownVal(cty.Bool)}, Elapsed: time.Hour}, events.CondNotYet},
	} {
		conds := l.Conditions(c.o)
		if len(conds) != 2 || conds[1].State != c.want || !strings.Contains(conds[1].Source, "grace period (2s)") {
			t.Errorf("%+v: %+v, want %v", c.o, conds, c.want)
		}
	}
	for _, k := range steps.Kinds() {
		if once := k.Defaults().Once(); once != (k.Name == "run" || k.Name == "benchmark" || k.Name == "assert") {
			t.Errorf("%s: once %v", k.Name, once)
		}
	}
	assert, _ := steps.Lookup("assert")
	if cfg, _ := assert.Decode(map[string]cty.Value{"timeout": cty.StringVal("30s")}); cfg.Once() {
		t.Error("an assert with a timeout is retried")
	}
}

func TestStaticChecks(t *testing.T) {
	rng := func(line int) hcl.Range { return hcl.Range{Filename: "p.hcl", Start: hcl.Pos{Line: line}} }
	expr := func(line int) hcl.Expression { return hcl.StaticExpr(cty.StringVal("x"), rng(line)) }
	summaries := func(kind string, s steps.Shape) string {
		k, _ := steps.Lookup(kind)
		var out []string
		for _, d := range k.Defaults().Static(s) {
			out = append(out, d.Summary)
		}
		return strings.Join(out, ", ")
	}
	load := steps.Part{Type: "load", Label: "http", Range: rng(3)}
	metric := steps.Part{Type: "metric", Label: "rps", Range: rng(4)}
	for _, c := range []struct {
		kind  string
		shape steps.Shape
		want  string
	}{
		{"run", steps.Shape{}, "Missing command"},
		{"run", steps.Shape{Misspelled: map[string]bool{"command": true}}, ""},
		{"launch", steps.Shape{Attrs: map[string]hcl.Expression{"command": expr(2)}}, ""},
		{"wait", steps.Shape{}, "Missing postcondition"},
		{"assert", steps.Shape{Blocks: []steps.Part{{Type: "postcondition"}}}, ""},
		{"benchmark", steps.Shape{}, "Missing load or command"},
		{"benchmark", steps.Shape{Attrs: map[string]hcl.Expression{"command": expr(2)}, Blocks: []steps.Part{load}}, "Conflicting load and command"},
		{"benchmark", steps.Shape{Attrs: map[string]hcl.Expression{"env": expr(2), "workdir": expr(5)}, Blocks: []steps.Part{load, metric}}, "Metric with a load, Environment without a command"},
		{"benchmark", steps.Shape{Attrs: map[string]hcl.Expression{"command": expr(2)}}, "Benchmark records no metrics"},
		{"benchmark", steps.Shape{Attrs: map[string]hcl.Expression{"command": expr(2)}, Blocks: []steps.Part{metric}}, ""},
	} {
		if got := summaries(c.kind, c.shape); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.kind, c.shape, got, c.want)
		}
	}
	wait, _ := steps.Lookup("wait")
	run, _ := steps.Lookup("run")
	if !strings.Contains(wait.Hint("command"), "probe \"exec\"") || !strings.Contains(run.Hint("grace"), "Only a launch") || run.Hint("timeout") != "" {
		t.Errorf("hints: %q, %q", wait.Hint("command"), run.Hint("grace"))
	}
}

func TestKindsSayHowExplainWordsTheirAction(t *testing.T) {
	for _, k := range steps.Kinds() {
		// A kind that takes a command is told by it; one without says
		// what it does instead.
		command := false
		for _, a := range schema.Attrs(k.Defaults()) {
			command = command || a.Name == "command"
		}
		if command != (k.Explain.Command != "") || command == (k.Explain.NoAction != "") {
			t.Errorf("%s: explain words its action as %+v", k.Name, k.Explain)
		}
	}
}
