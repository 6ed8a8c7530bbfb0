package runner

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/runner/events"
)

// A condition that cannot be decided yet waits; one that fails on known
// values is an error; what try() and can() catch stays caught, except a
// pattern that does not compile.
func TestConditionErrorsAreTold(t *testing.T) {
	json := func(attrs map[string]cty.Value) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"status":  cty.NumberIntVal(200),
			"body":    cty.StringVal("abc"),
			"json":    cty.ObjectVal(attrs),
			"headers": cty.MapVal(map[string]cty.Value{"content-type": cty.StringVal("text/plain")}),
		})
	}
	ectx := &hcl.EvalContext{
		Functions: plans.Functions(),
		Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{
				"bad":  cty.StringVal("ready ("),
				"none": cty.NullVal(cty.String),
			}),
			"local": cty.ObjectVal(map[string]cty.Value{
				"m": cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}),
			}),
			"probe": cty.ObjectVal(map[string]cty.Value{
				"h": json(map[string]cty.Value{
					"ready": cty.NullVal(cty.Bool),
					"items": cty.EmptyTupleVal,
					"count": cty.NullVal(cty.Number),
					"name":  cty.StringVal("x"),
					"word":  cty.StringVal("maybe"),
				}),
				"null": cty.ObjectVal(map[string]cty.Value{"json": cty.NullVal(cty.DynamicPseudoType), "body": cty.StringVal("503")}),
				"down": cty.DynamicVal,
			}),
			"self": cty.ObjectVal(map[string]cty.Value{"stdout": cty.StringVal("loading\n")}),
		},
	}
	for _, tc := range []struct {
		src  string
		want events.CondState
	}{
		// Not there yet: waiting can change these.
		{`probe.h.json.missing == true`, events.CondNotYet},
		{`probe.h.json.ready`, events.CondNotYet},
		{`probe.h.json.ready == true`, events.CondFalse}, // null == true is false, as HCL says
		{`probe.h.json.items[0].name == "a"`, events.CondNotYet},
		{`probe.h.json.count > 3`, events.CondNotYet},
		{`strcontains(probe.h.json.ready, "x")`, events.CondNotYet},
		{`probe.null.json.ready`, events.CondNotYet},
		{`probe.null.json["ready"] == true`, events.CondNotYet},
		{`probe.h.headers["location"] == "/x"`, events.CondNotYet},
		{`probe.down.status == 200`, events.CondNotYet},
		{`regex(var.bad, probe.down.body) == "x"`, events.CondError}, // the pattern does not wait for the probe
		{`local.m[probe.h.json.name] == "b"`, events.CondNotYet},
		{`length([for i in probe.h.json.items : i if i.ready]) == 0`, events.CondHeld},
		{`length([for i in probe.null.json : i]) == 0`, events.CondNotYet},
		{`length([for o in [probe.h.json] : o.missing]) == 1`, events.CondNotYet},
		// Fails on known values: an error at once.
		{`regex(var.bad, probe.h.body) == "x"`, events.CondError},
		{`can(regex(var.bad, probe.h.body))`, events.CondError},
		{`try(regex(var.bad, self.stdout)[0], "") == ""`, events.CondError},
		{`probe.h.body > 3`, events.CondError},
		{`tonumber(probe.h.body) > 3`, events.CondError},
		{`regex("ready: (\\d+)", self.stdout)[0] == "1"`, events.CondNotYet}, // the line has not been written yet
		{`regex("load", probe.h.body) == "load"`, events.CondNotYet},
		{`regex(var.bad, "fixed text") == "x"`, events.CondError},      // not observed: it cannot change
		{`regex(probe.h.body, "fixed text") == "x"`, events.CondError}, // the pattern is what is observed
		{`regex("(\\d+)", probe.h.json.name)[0] == "1"`, events.CondNotYet},
		{`probe.h.json.word ? true : false`, events.CondError},
		{`"a${probe.h.json}" == ""`, events.CondError},
		{`probe.h.body`, events.CondError}, // not a bool
		{`local.m["nope"] == "b"`, events.CondError},
		{`var.none == null ? null : true`, events.CondError}, // null, and waiting cannot change it
		{`length(var.none) > 0`, events.CondError},
		// What the plan catches on purpose stays caught.
		{`can(regex("ready: (\\d+)", self.stdout))`, events.CondFalse},
		{`try(tonumber(probe.h.body), 0) == 0`, events.CondHeld},
		{`try(probe.h.json.missing, "none") == "none"`, events.CondHeld},
		{`can(probe.h.json.items[0])`, events.CondFalse},
		// && does not evaluate its right side when the left is false.
		{`probe.h.status == 500 && tonumber(probe.h.body) > 3`, events.CondFalse},
		{`probe.h.status == 200 && tonumber(probe.h.body) > 3`, events.CondError},
	} {
		t.Run(tc.src, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte(tc.src), "plan.hcl", hcl.Pos{Line: 3, Column: 15, Byte: 0})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			s := &stepRun{r: &run{}, errs: map[string]error{}}
			got := s.cond("postcondition", &plans.Condition{Condition: expr, Source: tc.src, Refs: plans.RefsOf(expr)}, ectx, map[string]string{})
			if got.State != tc.want {
				t.Fatalf("state %q (%s), want %q", got.State, got.Reason, tc.want)
			}
			if got.State == events.CondError && got.Reason[:len("plan.hcl:3:")] != "plan.hcl:3:" {
				t.Errorf("reason %q does not say where", got.Reason)
			}
		})
	}
}
