package probes

import (
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
)

// Validation decodes what it cannot know yet as the defaults: a kind's
// Check must pass its own defaults, but for the choice its OneOf list
// leaves to the plan.
func TestKindsDefaultsPassTheirChecks(t *testing.T) {
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			if k.Doc == "" || len(k.Outputs) == 0 {
				t.Errorf("kind %q lacks a doc or outputs", k.Name)
			}
			attrs := map[string]bool{}
			for _, a := range schema.Attrs(k.Defaults()) {
				attrs[a.Name] = true
			}
			for _, n := range k.OneOf {
				if !attrs[n] {
					t.Errorf("OneOf names %q, which is no attribute", n)
				}
			}
			for _, err := range schema.Errors(schema.DecodeChecked(nil, k.Defaults())) {
				var one *schema.OneOfError
				if !errors.As(err, &one) || len(k.OneOf) == 0 {
					t.Errorf("the defaults fail their check: %v", err)
				}
			}
		})
	}
}

// Each check, as validate and the run both meet it: the attribute at
// fault and what to do.
func TestKindChecks(t *testing.T) {
	for _, c := range []struct {
		kind string
		vals map[string]cty.Value
		want string // "" for none
	}{
		{"http", map[string]cty.Value{"url": cty.StringVal("http://127.0.0.1/"), "timeout": cty.StringVal("0s")}, "timeout must be longer than zero"},
		{"http", map[string]cty.Value{"url": cty.StringVal("http://127.0.0.1/"), "timeout": cty.StringVal("250ms")}, ""},
		{"process", map[string]cty.Value{"match": cty.StringVal("python3 -m sglang[.")}, "match is not a regular expression: error parsing regexp: missing closing ]"},
		{"process", map[string]cty.Value{"match": cty.StringVal("x"), "pid": cty.NumberIntVal(42)}, "sets match and pid; set only one of match, pid or step"},
		{"process", map[string]cty.Value{"pid": cty.NumberIntVal(-1)}, "pid must be a process id, not -1"},
		{"process", map[string]cty.Value{"step": cty.StringVal("launch.server")}, ""},
		{"log", map[string]cty.Value{}, "sets none of path or step; set one"},
		{"log", map[string]cty.Value{"path": cty.StringVal("x.log"), "since": cty.StringVal("launch.server")}, ""},
		{"port", map[string]cty.Value{"port": cty.NumberIntVal(70000)}, "port must be from 1 to 65535, not 70000"},
		{"port", map[string]cty.Value{"port": cty.NumberIntVal(8080)}, ""},
		{"port", map[string]cty.Value{"port": cty.NumberFloatVal(80.5)}, "port must be a whole number, not 80.5"},
	} {
		k, _ := Lookup(c.kind)
		err := schema.DecodeChecked(c.vals, k.Defaults())
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: %v", c.kind, c.vals, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %v: got %v, want %q", c.kind, c.vals, err, c.want)
		}
	}
}

// Summaries say what the config leaves implicit: the method a body
// implies, the timeout and redirects, where a port probe connects.
func TestSummaries(t *testing.T) {
	for _, c := range []struct {
		kind string
		vals map[string]cty.Value
		want string
	}{
		{"http", map[string]cty.Value{"url": cty.StringVal("u")}, "GET, timeout 10s, redirects not followed"},
		{"http", map[string]cty.Value{"json": cty.ObjectVal(map[string]cty.Value{"a": cty.True})}, "POST, timeout 10s, redirects not followed"},
		{"http", map[string]cty.Value{"method": cty.StringVal("PUT"), "body": cty.StringVal("x"), "follow_redirects": cty.True, "timeout": cty.StringVal("2m")}, "PUT, timeout 2m, follows up to 10 redirects"},
		{"port", map[string]cty.Value{"port": cty.NumberIntVal(1)}, "connects to 127.0.0.1"},
		{"log", map[string]cty.Value{"path": cty.StringVal("x.log")}, "from this step's start"},
		{"log", map[string]cty.Value{"path": cty.StringVal("x.log"), "since": cty.StringVal("launch.a")}, ""},
	} {
		k, _ := Lookup(c.kind)
		cfg := k.Defaults()
		if err := schema.Decode(c.vals, cfg); err != nil {
			t.Fatal(err)
		}
		if got := cfg.Summary(); got != c.want {
			t.Errorf("%s %v: summary %q, want %q", c.kind, c.vals, got, c.want)
		}
	}
}
