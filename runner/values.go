package runner

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/plans"
)

// redacted stands where a sensitive value would be shown.
const redacted = plans.Redacted

// Render shows a value briefly, as evidence: strings quoted and cut,
// collections as JSON, sensitive values as (sensitive).
func Render(v cty.Value) string {
	if v == cty.NilVal {
		return "(none)"
	}
	if v.HasMark(plans.Sensitive) || v.ContainsMarked() {
		if _, marks := v.UnmarkDeep(); hasSensitive(marks) {
			return redacted
		}
		v, _ = v.UnmarkDeep()
	}
	if !v.IsKnown() {
		return "(not known yet)"
	}
	if v.IsNull() {
		return "null"
	}
	switch v.Type() {
	case cty.String:
		return fmt.Sprintf("%q", cut(v.AsString(), 200))
	case cty.Number:
		return v.AsBigFloat().Text('g', 10)
	case cty.Bool:
		if v.True() {
			return "true"
		}
		return "false"
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.GoString()
	}
	return cut(string(b), 300)
}

func hasSensitive(marks cty.ValueMarks) bool {
	_, ok := marks[plans.Sensitive]
	return ok
}

// cut keeps about n bytes of s, never splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// plain turns a value the plan computed into the string an action uses
// (a command line, a path), lifting sensitivity marks: the action needs the
// real value; what is shown comes from shown.
func plain(v cty.Value) (string, bool, error) {
	v, marks := v.UnmarkDeep()
	sensitive := hasSensitive(marks)
	if v.IsNull() {
		return "", sensitive, nil
	}
	if !v.IsKnown() {
		return "", sensitive, fmt.Errorf("the value is not known")
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), sensitive, nil
	case cty.Number:
		return v.AsBigFloat().Text('f', -1), sensitive, nil
	case cty.Bool:
		if v.True() {
			return "true", sensitive, nil
		}
		return "false", sensitive, nil
	}
	return "", sensitive, fmt.Errorf("must be a string, not %s", v.Type().FriendlyName())
}

// referenced renders the values of every reference an expression reads
// (refs, from the analysed plan) that is not a variable or a local (those
// are the plan's inputs, shown once at the start), for evidence:
// "probe.health.status" -> "503". What the world returned (a probe's
// value, a command's output) is guarded; lockstep's own values (a pid,
// self.command as shown) are not.
func referenced(refs plans.Refs, ctx *hcl.EvalContext, into map[string]string, g *guard) {
	for _, r := range refs {
		if r.Root == "var" || r.Root == "local" {
			continue
		}
		if _, done := into[r.Text]; done {
			continue
		}
		v, diags := r.Traversal.TraverseAbs(ctx)
		if diags.HasErrors() {
			into[r.Text] = "(" + g.text(diagText(diags)) + ")"
			continue
		}
		if fromWorld(r) {
			into[r.Text] = g.render(v)
			continue
		}
		into[r.Text] = Render(v)
	}
}

// ownOutputs are the self outputs lockstep itself makes: what it
// launched, how, where (never what the world said).
var ownOutputs = map[string]bool{"pid": true, "pgid": true, "log_path": true, "command": true, "exit_code": true, "alive": true, "metrics": true, "duration_ms": true}

// fromWorld reports whether a reference reads something the world said:
// a probe's value, a command's output, a log (self.stdout,
// step.run.x.stdout), or a whole object holding one.
func fromWorld(r plans.Ref) bool {
	switch r.Root {
	case "self":
		return !ownOutputs[r.Name]
	case "step":
		return !ownOutputs[r.Attr]
	}
	return true
}

// diagText is the first error of diags in one line.
func diagText(diags hcl.Diagnostics) string {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if d.Detail != "" {
				return strings.TrimSuffix(d.Summary, ".") + ": " + strings.TrimSuffix(d.Detail, ".")
			}
			return d.Summary
		}
	}
	return "unknown error"
}
