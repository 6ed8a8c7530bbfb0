package plans_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

// wait wraps a postcondition in a plan.
func wait(cond string) string {
	return "step \"wait\" \"w\" {\n  postcondition {\n    condition = " + cond + "\n  }\n}\n"
}

// local wraps an expression in a plan as a local.
func local(expr string) string {
	return "locals {\n  x = " + expr + "\n}\n"
}

// late puts src after 100 steps, 300 lines: past the first pieces hcl
// parses (plans/cut.go).
func late(src string) string {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "step \"run\" \"s%d\" {\n  command = \"echo %d\"\n}\n", i, i)
	}
	return b.String() + src
}

// limitDiag returns the first error of diags, failing unless it reports a
// limit.
func limitDiag(t *testing.T, diags hcl.Diagnostics) *hcl.Diagnostic {
	t.Helper()
	if !diags.HasErrors() {
		t.Fatal("no error")
	}
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if plans.ExceedsLimit(hcl.Diagnostics{d}) == nil {
				t.Fatalf("the error is not a limit: %s: %s", d.Summary, d.Detail)
			}
			return d
		}
	}
	return nil
}

// TestParseLimits: each plan is refused by Parse (validate, explain and
// run all start there) with a diagnostic at the place that exceeds a
// limit, saying which.
func TestParseLimits(t *testing.T) {
	chain := func(op string, n int) string { return "1" + strings.Repeat(op+"1", n) }
	for _, tc := range []struct {
		name, file, src string
		summary, detail string
		line            int
	}{
		{"huge exponent in a duration", "p.hcl", "step \"wait\" \"w\" {\n  timeout = \"${1e100000000}s\"\n  postcondition {\n    condition = true\n  }\n}\n",
			"Number out of range", "about 10^100000000", 2},
		{"tiny exponent", "p.hcl", local("1e-100000"), "Number out of range", "at least 4.9e-324", 2},
		{"long number", "p.hcl", local(strings.Repeat("7", 2000)), "Number too long", "2000 characters", 2},
		// Written with digits alone, beyond the 300 that are surely in range.
		{"huge without an exponent", "p.hcl", local("1" + strings.Repeat("0", 400)), "Number out of range", "about 10^400", 2},
		{"tiny without an exponent", "p.hcl", local("0." + strings.Repeat("0", 400) + "1"), "Number out of range", "at least 4.9e-324", 2},
		{"nested parentheses", "p.hcl", local(strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)), "Too deeply nested", "64 levels", 2},
		{"nested lists", "p.hcl", local(strings.Repeat("[", 65) + strings.Repeat("]", 65)), "Too deeply nested", "", 2},
		{"nested templates", "p.hcl", local(strings.Repeat(`"${`, 40) + "1" + strings.Repeat(`}"`, 40)), "Too deeply nested", "", 2},
		{"unary operators", "p.hcl", wait(strings.Repeat("!", 5000) + "true"), "Too deeply nested", "", 3},
		{"a long chain of operators", "p.hcl", local(chain("+", 5000)), "Too deeply nested", "", 2},
		// Parsed in pieces, each walked as it is parsed: the limit holds
		// in the last piece as in the first.
		{"a long chain late in a long plan", "p.hcl", late(local(chain("+", 5000))), "Too deeply nested", "", 302},
		{"a tiny exponent late in a long plan", "p.hcl", late(local("1e-100000")), "Number out of range", "at least 4.9e-324", 302},
		{"arithmetic beyond a float", "p.hcl", local("1e300 * 1e300"), "Operation failed", "10^600", 2},
		{"arithmetic in a template", "p.hcl", wait(`"${1e200 * 1e200 * 1e200}" != ""`), "Operation failed", "out of range", 3},
		{"range of a billion", "p.hcl", local("range(1e9)"), "Error in function call", "1000000000 numbers", 2},
		{"format width", "p.hcl", local(`format("%999999999d", 1)`), "Error in function call", "width or precision", 2},
		{"replace growing", "p.hcl", "locals {\n  a = \"" + strings.Repeat("a", 10000) + "\"\n  x = replace(local.a, \"a\", local.a)\n}\n", "Error in function call", "a string is at most 64 MiB", 3},
		{"split into too many", "p.hcl", "locals {\n  a = \"" + strings.Repeat("a", 200000) + "\"\n  x = split(\"\", local.a)\n}\n", "Error in function call", "at most 100000", 3},
		{"tonumber of long text", "p.hcl", local(`tonumber("` + strings.Repeat("1", 5000) + `")`), "Error in function call", "5000 characters", 2},
		{"text to number in arithmetic", "p.hcl", local(`parseint("` + strings.Repeat("1", 5000) + `", 10)`), "Error in function call", "5000 characters", 2},
		{"jsondecode nested", "p.hcl", local(`jsondecode("` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `")`), "Error in function call", "JSON nested", 2},
		{"a doubling chain of locals", "p.hcl", doublingLocals(30), "Value beyond a limit", "The value of local.l25 is beyond a limit: the locals together hold more than 64 MiB", 27},
		{"many large locals", "p.hcl", doublingLocals(20) + manyCopies(40), "Value beyond a limit", "the locals together hold more than 64 MiB", 0},
		{"a string beyond the limit", "p.hcl", "locals {\n  a = \"" + strings.Repeat("x", 1<<19) + "\"\n  x = join(local.a, [for i in range(130) : \"\"])\n}\n", "Error in function call", "a string is at most 64 MiB", 3},
		{"JSON nesting", "p.json", `{"locals": {"x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, "Too deeply nested", "", 1},
		{"JSON number", "p.json", `{"locals": {"x": 1e100000000}}`, "Number out of range", "", 1},
		{"JSON template", "p.json", "{\"locals\": {\n\"x\": \"${1e100000000}\"}}", "Number out of range", "", 2},
		{"JSON template nesting", "p.json", `{"locals": {"x": "${` + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + `}"}}`, "Too deeply nested", "", 1},
		{"file too large", "p.hcl", local(`"` + strings.Repeat("x", plans.MaxPlanBytes) + `"`), "File too large", "larger than 1 MiB, the limit", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := plans.Parse(tc.file, []byte(tc.src))
			d := limitDiag(t, diags)
			if d.Summary != tc.summary || !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("got %q: %s\nwant %q with %q", d.Summary, d.Detail, tc.summary, tc.detail)
			}
			if d.Subject == nil || d.Subject.Filename != tc.file {
				t.Errorf("no place in %s: %v", tc.file, d.Subject)
			} else if tc.line != 0 && d.Subject.Start.Line != tc.line {
				t.Errorf("at line %d, want %d", d.Subject.Start.Line, tc.line)
			}
		})
	}
}

// doublingLocals makes n locals each twice the one before: 2^n bytes.
func doublingLocals(n int) string {
	var b strings.Builder
	b.WriteString("locals {\n  l0 = \"xx\"\n")
	for i := 1; i <= n; i++ {
		b.WriteString("  l" + itoa(i) + " = \"${local.l" + itoa(i-1) + "}${local.l" + itoa(i-1) + "}\"\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// manyCopies makes n locals of about 2 MiB each, made from l20.
func manyCopies(n int) string {
	var b strings.Builder
	b.WriteString("locals {\n")
	for i := range n {
		b.WriteString("  c" + itoa(i) + " = \"${local.l20}-\"\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// TestWithinLimits: values at the edge of the limits, and what real plans
// write, pass.
func TestWithinLimits(t *testing.T) {
	for _, src := range []string{
		local("1.7e308"),
		local("-1.7e308"),
		local("5e-324"),
		local("1e300 * 1e8"),
		local("length(range(1024))"),
		local(`format("%1000d", 1)`),
		local(strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60)),
		local(`jsondecode("{\"a\": [1, 2, {\"b\": 3}]}").a[2].b`),
		wait(`strcontains(join(",", split("\n", "a\nb")), "a,b")`),
		doublingLocals(20),
	} {
		if _, diags := plans.Parse("p.hcl", []byte(src)); diags.HasErrors() {
			t.Errorf("%.80s: %s", src, diags.Error())
		}
	}
}

// TestResolveLimits: values given from outside the plan are held to the
// limits, with a diagnostic naming where the value came from.
func TestResolveLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	src := `variable "n" {
  type    = number
  default = 1
}
variable "s" {
  type    = string
  default = ""
}
variable "l" {
  type    = list(number)
  default = []
}
locals {
  twice = "${var.s}${var.s}"
}
`
	p, diags := plans.Parse("p.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	long := strings.Repeat("x", plans.MaxVarValueBytes+1)
	for _, tc := range []struct {
		name   string
		in     plans.Inputs
		detail string
	}{
		{"-var number beyond a float", plans.Inputs{Vars: []string{"n=1e100000000"}}, "from -var is beyond a limit: a number of about 10^100000000"},
		{"-var value too long", plans.Inputs{Vars: []string{"s=" + long}}, "at most 64 KiB"},
		{"environment value too long", plans.Inputs{Environ: []string{"LOCKSTEP_VAR_s=" + long}}, "LOCKSTEP_VAR_s gives"},
		{"-var expression nested", plans.Inputs{Vars: []string{"l=" + strings.Repeat("[", 100) + strings.Repeat("]", 100)}}, "64 levels"},
		{"-var expression arithmetic", plans.Inputs{Vars: []string{"l=[1e300 * 1e300]"}}, "out of range"},
		{"var file too large", plans.Inputs{VarFiles: []string{write("big.hcl", "s = \""+strings.Repeat("x", plans.MaxVarFileBytes)+"\"\n")}}, "larger than 1 MiB, the limit"},
		{"var file number", plans.Inputs{VarFiles: []string{write("n.hcl", "n = 1e100000000\n")}}, "10^100000000"},
		{"var file number as text", plans.Inputs{VarFiles: []string{write("t.hcl", "n = \"1e100000000\"\n")}}, "from var-file"},
		{"var file nesting", plans.Inputs{VarFiles: []string{write("d.json", `{"l": `+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`)}}, "64 levels"},
		{"a local from a long string", plans.Inputs{VarFiles: []string{write("s.hcl", "s = \""+strings.Repeat("x", 1000)+"\"\n")}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := p.Resolve(tc.in)
			if tc.detail == "" {
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				return
			}
			d := limitDiag(t, diags)
			if !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("%s: %s, want %q", d.Summary, d.Detail, tc.detail)
			}
			if strings.Contains(d.Detail, long[:100]) {
				t.Error("the diagnostic shows the value")
			}
		})
	}
}

// TestCheckValue: the bound the runner puts on observed values.
func TestCheckValue(t *testing.T) {
	huge := cty.MustParseNumberVal("1e100000000")
	many := make([]cty.Value, plans.MaxElements+1)
	for i := range many {
		many[i] = cty.True
	}
	for _, tc := range []struct {
		name string
		v    cty.Value
		ok   bool
	}{
		{"a number", cty.NumberFloatVal(1.5e300), true},
		{"zero", cty.Zero, true},
		{"infinity", cty.PositiveInfinity, true},
		{"a huge number", huge, false},
		{"a huge number inside", cty.ObjectVal(map[string]cty.Value{"json": cty.TupleVal([]cty.Value{huge})}), false},
		{"a marked huge number", huge.Mark(plans.Sensitive), false},
		{"a tiny number", cty.MustParseNumberVal("1e-400"), false},
		{"too many elements", cty.ListVal(many), false},
		{"many, within", cty.ListVal(many[1:]), true},
		{"a long string", cty.StringVal(strings.Repeat("x", plans.MaxStringBytes+1)), false},
		{"unknown", cty.UnknownVal(cty.Number), true},
	} {
		err := plans.CheckValue(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckValue = %v", tc.name, err)
		}
		var le *plans.LimitError
		if err != nil && !errors.As(err, &le) {
			t.Errorf("%s: %T is not a *LimitError", tc.name, err)
		}
	}
}

// TestFunctionsKeepLimits calls the bounded functions directly, as the
// runner's evaluations do with observed values.
func TestFunctionsKeepLimits(t *testing.T) {
	fs := plans.Functions()
	text := cty.StringVal(strings.Repeat("ab\n", 1000))
	for _, tc := range []struct {
		fn   string
		args []cty.Value
	}{
		{"range", []cty.Value{cty.NumberIntVal(1e9)}},
		{"range", []cty.Value{cty.NumberIntVal(0), cty.NumberIntVal(1e6), cty.NumberFloatVal(0.5)}},
		{"replace", []cty.Value{text, cty.StringVal("/b/"), cty.StringVal(strings.Repeat("$0", 40000))}},
		{"regexall", []cty.Value{cty.StringVal(""), cty.StringVal(strings.Repeat("a", plans.MaxElements+5))}},
		{"indent", []cty.Value{cty.NumberIntVal(1e6), text}},
		{"join", []cty.Value{cty.StringVal(strings.Repeat("-", 1<<20)), cty.ListVal(many(cty.StringVal("a"), 100))}},
		{"formatlist", []cty.Value{cty.StringVal("%.5000f"), cty.ListVal(many(cty.NumberIntVal(1), 3))}},
		{"abs", []cty.Value{cty.StringVal(strings.Repeat("9", 3000))}},
		{"jsondecode", []cty.Value{cty.StringVal(`{"n": ` + strings.Repeat("1", 2000) + `}`)}},
		{"floor", []cty.Value{cty.StringVal("1e400")}},
	} {
		_, err := fs[tc.fn].Call(tc.args)
		var le *plans.LimitError
		if !errors.As(err, &le) {
			t.Errorf("%s: got %v, want a limit error", tc.fn, err)
		}
	}
	// Within the limits the functions work as before.
	if v, err := fs["join"].Call([]cty.Value{cty.StringVal(","), cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)})}); err != nil || v.AsString() != "a,1" {
		t.Errorf("join = %#v, %v", v, err)
	}
	if v, err := fs["range"].Call([]cty.Value{cty.NumberIntVal(3)}); err != nil || v.LengthInt() != 3 {
		t.Errorf("range = %#v, %v", v, err)
	}
}

func many(v cty.Value, n int) []cty.Value {
	out := make([]cty.Value, n)
	for i := range out {
		out[i] = v
	}
	return out
}
