package plans_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/steps"
)

const varsPlan = `
variable "backend" {
  type    = string
  default = "from_default"
}
variable "tp" {
  type    = number
  default = 8
}
variable "flags" {
  type    = list(string)
  default = []
}
variable "token" {
  type      = string
  sensitive = true
  default   = "s3cret"
}
variable "required" {
  type = string
}
locals {
  url    = "http://x/?token=${var.token}"
  double = var.tp * 2
}
step "run" "a" {
  command = "echo ${shellquote(var.backend)}"
}
`

func mustParse(t *testing.T, src string) *plans.Plan {
	t.Helper()
	p, diags := plans.Parse("test.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	return p
}

func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	varFile := filepath.Join(dir, "vars.hcl")
	if err := os.WriteFile(varFile, []byte("backend = \"from_file\"\ntp = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, varsPlan)
	env := []string{"LOCKSTEP_VAR_backend=from_env", "LOCKSTEP_VAR_required=r_env", "LOCKSTEP_VAR_flags=[\"--a\", \"--b c\"]"}
	tests := []struct {
		name string
		in   plans.Inputs
		want string
		tp   int64
	}{
		{"default", plans.Inputs{Environ: []string{"LOCKSTEP_VAR_required=x"}}, "from_default", 8},
		{"env over default", plans.Inputs{Environ: env}, "from_env", 8},
		{"file over env", plans.Inputs{Environ: env, VarFiles: []string{varFile}}, "from_file", 4},
		{"-var over file", plans.Inputs{Environ: env, VarFiles: []string{varFile}, Vars: []string{"backend=from_cli", "tp=2"}}, "from_cli", 2},
		{"last -var wins", plans.Inputs{Environ: env, Vars: []string{"backend=first", "backend=second"}}, "second", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, diags := p.Resolve(tt.in)
			if diags.HasErrors() {
				t.Fatalf("resolve: %s", diags.Error())
			}
			if got := s.Vars["backend"].AsString(); got != tt.want {
				t.Errorf("backend = %q, want %q", got, tt.want)
			}
			tp, _ := s.Vars["tp"].AsBigFloat().Int64()
			if tp != tt.tp {
				t.Errorf("tp = %d, want %d", tp, tt.tp)
			}
			if d, _ := s.Locals["double"].AsBigFloat().Int64(); d != 2*tt.tp {
				t.Errorf("local.double = %d, want %d", d, 2*tt.tp)
			}
		})
	}
}

func TestResolveTypedConversion(t *testing.T) {
	p := mustParse(t, varsPlan)
	s, diags := p.Resolve(plans.Inputs{Vars: []string{"required=x", `flags=["--a", "--b c"]`, "tp=16"}})
	if diags.HasErrors() {
		t.Fatalf("resolve: %s", diags.Error())
	}
	if got := s.Vars["flags"]; !got.Type().Equals(cty.List(cty.String)) || got.LengthInt() != 2 || got.Index(cty.NumberIntVal(1)).AsString() != "--b c" {
		t.Errorf("flags = %#v, want a list of two strings", got)
	}
	if !s.Vars["tp"].Type().Equals(cty.Number) {
		t.Errorf("tp has type %s, want number", s.Vars["tp"].Type().FriendlyName())
	}
}

func TestResolveErrors(t *testing.T) {
	p := mustParse(t, varsPlan)
	tests := []struct {
		name string
		in   plans.Inputs
		want string
	}{
		{"missing required", plans.Inputs{}, `Variable "required" has no default`},
		{"not a number", plans.Inputs{Vars: []string{"required=x", "tp=eight"}}, `"eight" for "tp", which must be a number`},
		{"undeclared", plans.Inputs{Vars: []string{"required=x", "backnd=y"}}, `Did you mean "backend"?`},
		{"no equals", plans.Inputs{Vars: []string{"required"}}, "is not NAME=VALUE"},
		{"bad list", plans.Inputs{Vars: []string{"required=x", "flags=[1,"}}, "Missing expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := p.Resolve(tt.in)
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.want) {
				t.Errorf("diagnostics = %v, want an error containing %q", diags, tt.want)
			}
		})
	}
}

func TestResolveValidation(t *testing.T) {
	p := mustParse(t, `
variable "backend" {
  default = "a"
  validation {
    condition     = contains(["a", "b"], var.backend)
    error_message = "backend must be a or b."
  }
}
`)
	if _, diags := p.Resolve(plans.Inputs{Vars: []string{"backend=b"}}); diags.HasErrors() {
		t.Fatalf("valid value rejected: %s", diags.Error())
	}
	_, diags := p.Resolve(plans.Inputs{Vars: []string{"backend=c"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "backend must be a or b.") {
		t.Fatalf("diagnostics = %v, want the error_message", diags)
	}
	if got := diags[0].Subject.Start.Line; got != 5 {
		t.Errorf("diagnostic on line %d, want 5 (the condition)", got)
	}
}

func TestSensitiveMarksPropagate(t *testing.T) {
	p := mustParse(t, varsPlan)
	s, diags := p.Resolve(plans.Inputs{Vars: []string{"required=x"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if !s.Vars["token"].HasMark(plans.Sensitive) {
		t.Error("var.token is not marked sensitive")
	}
	if s.Vars["backend"].IsMarked() {
		t.Error("var.backend is marked, but it is not sensitive")
	}
	if !s.Locals["url"].HasMark(plans.Sensitive) {
		t.Error("local.url, made from var.token by a template, lost the mark")
	}
	expr, _ := hclParseExpr(t, `upper(shellquote(var.token))`)
	v, ds := expr.Value(s.EvalContext(nil))
	if ds.HasErrors() {
		t.Fatal(ds.Error())
	}
	if !v.HasMark(plans.Sensitive) {
		t.Error("a function of var.token lost the mark")
	}
	if got := plans.ShowValue(v); got != "(sensitive)" {
		t.Errorf("ShowValue = %q, want (sensitive)", got)
	}
}

func TestEvalContextExtraRoots(t *testing.T) {
	p := mustParse(t, varsPlan)
	s, _ := p.Resolve(plans.Inputs{Vars: []string{"required=x"}})
	expr, _ := hclParseExpr(t, `self.exit_code == 0 && probe.h.status == 200 && target.local.name == "local"`)
	v, ds := expr.Value(s.EvalContext(map[string]cty.Value{
		"self":  cty.ObjectVal(map[string]cty.Value{"exit_code": cty.NumberIntVal(0)}),
		"probe": cty.ObjectVal(map[string]cty.Value{"h": cty.ObjectVal(map[string]cty.Value{"status": cty.NumberIntVal(200)})}),
	}))
	if ds.HasErrors() {
		t.Fatal(ds.Error())
	}
	if !v.True() {
		t.Error("condition over extra roots is false, want true")
	}
}

func TestStepConfigEvaluatesDurations(t *testing.T) {
	p := mustParse(t, varsPlan)
	s, _ := p.Resolve(plans.Inputs{Vars: []string{"required=x"}})
	timeout := func(src string) (time.Duration, error) {
		expr, _ := hclParseExpr(t, src)
		cfg, _, err := s.StepConfig(&plans.Step{Kind: "wait", Attrs: map[string]hcl.Expression{"timeout": expr}}, nil)
		if err != nil {
			return 0, err
		}
		return time.Duration(cfg.Step().Timeout), nil
	}
	for src, want := range map[string]time.Duration{`"90s"`: 90 * time.Second, `"1h30m"`: 90 * time.Minute, `"${var.tp}s"`: 8 * time.Second} {
		if got, err := timeout(src); err != nil || got != want {
			t.Errorf("timeout = %s: %v, %v; want %v", src, got, err, want)
		}
	}
	if _, err := timeout(`"5d"`); err == nil || !strings.Contains(err.Error(), `"5d" is not a duration`) {
		t.Errorf(`timeout = "5d": %v`, err)
	}
	var ee *plans.EvalError
	if _, err := timeout(`var.nope`); !errors.As(err, &ee) || ee.Attr != "timeout" {
		t.Errorf("timeout = var.nope: %v, want an EvalError", err)
	}
}

func hclParseExpr(t *testing.T, src string) (hcl.Expression, hcl.Diagnostics) {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "expr.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse %s: %s", src, diags.Error())
	}
	return expr, nil
}

func TestStepDurationDefaults(t *testing.T) {
	p := mustParse(t, `
step "wait" "w" {
  postcondition {
    condition = true
  }
}
step "assert" "a" {
  postcondition {
    condition = true
  }
}
step "assert" "retried" {
  timeout  = "30s"
  interval = "250ms"
  postcondition {
    condition = true
  }
}
step "launch" "l" {
  command = "sleep 60"
  grace   = "0s"
}
`)
	s, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	tests := []struct {
		step              string
		timeout, interval time.Duration
	}{
		{"wait.w", 5 * time.Minute, time.Second},
		{"assert.a", 0, time.Second},
		{"assert.retried", 30 * time.Second, 250 * time.Millisecond},
		{"launch.l", 2 * time.Minute, 250 * time.Millisecond},
	}
	config := func(addr string) steps.Config {
		cfg, _, err := s.StepConfig(p.Step(addr), nil)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		return cfg
	}
	for _, tt := range tests {
		c := config(tt.step).Step()
		if timeout, interval := time.Duration(c.Timeout), time.Duration(c.Interval); timeout != tt.timeout || interval != tt.interval {
			t.Errorf("%s: timeout %v, interval %v; want %v, %v", tt.step, timeout, interval, tt.timeout, tt.interval)
		}
	}
	if g := config("launch.l").(*steps.LaunchConfig).Grace; g != 0 {
		t.Errorf("grace = %v, want 0s as written", g)
	}
	k, _ := steps.Lookup("launch")
	if g := k.Defaults().(*steps.LaunchConfig).Grace; time.Duration(g) != 2*time.Second {
		t.Errorf("default grace = %v, want 2s", g)
	}
}

func TestStepOutputs(t *testing.T) {
	p := mustParse(t, varsPlan)
	s, _ := p.Resolve(plans.Inputs{Vars: []string{"required=x"}})
	steps := plans.StepOutputs(map[string]cty.Value{
		"launch.server": cty.ObjectVal(map[string]cty.Value{"pid": cty.NumberIntVal(42)}),
		"run.build":     cty.ObjectVal(map[string]cty.Value{"stdout": cty.StringVal("ok")}),
	})
	expr, _ := hclParseExpr(t, `"${step.launch.server.pid} ${step.run.build.stdout}"`)
	v, diags := expr.Value(s.EvalContext(map[string]cty.Value{"step": steps}))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if v.AsString() != "42 ok" {
		t.Errorf("got %q, want \"42 ok\"", v.AsString())
	}
}

func TestResolveVarFileErrorPointsAtTheValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(path, []byte("backend = \"b\"\ntp = \"eight\"\nbackned = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, varsPlan)
	s, diags := p.Resolve(plans.Inputs{VarFiles: []string{path}, Vars: []string{"required=x"}})
	got := map[string]string{}
	for _, d := range diags {
		got[d.Summary] = fmt.Sprintf("%s:%d:%d %d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, d.Severity)
	}
	if got["Invalid value for variable"] != fmt.Sprintf("bad.hcl:2:6 %d", hcl.DiagError) {
		t.Errorf("type error at %q, want bad.hcl:2:6", got["Invalid value for variable"])
	}
	if !strings.Contains(diags.Error(), `Did you mean "backend"?`) || got["Value for undeclared variable"] != fmt.Sprintf("bad.hcl:3:1 %d", hcl.DiagWarning) {
		t.Errorf("undeclared value: %v", diags)
	}
	if s.Files[path] == nil {
		t.Error("the var file is not in Scope.Files, so its diagnostics cannot show the source")
	}
}
