package plans_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/plans"
)

// FuzzParse feeds arbitrary files through everything a plan goes through
// before it runs: parse and static checks (as HCL and as JSON), variable
// resolution, explain, and fmt. Nothing may panic, and fmt
// must be stable. The seed corpus is testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, name := range []string{"fuzz.hcl", "fuzz.json"} {
			p, diags := plans.Parse(name, src)
			if p == nil {
				t.Fatal("Parse returned a nil plan")
			}
			for _, d := range diags {
				if d.Summary == "" {
					t.Errorf("diagnostic without a summary: %#v", d)
				}
			}
			if diags.HasErrors() {
				continue
			}
			s, rdiags := p.Resolve(plans.Inputs{})
			if rdiags.HasErrors() {
				s = nil
			}
			if x := plans.Explain(p, s); len(x.Steps) != len(p.Steps) {
				t.Errorf("Explain gave %d steps of %d", len(x.Steps), len(p.Steps))
			}
		}
		once := plans.Format(src)
		if twice := plans.Format(once); string(twice) != string(once) {
			// hclwrite is not idempotent on some invalid input; only
			// valid files must be stable.
			if _, diags := plans.Parse("fuzz.hcl", src); !diags.HasErrors() {
				t.Errorf("Format is not stable:\n%s\n---\n%s", once, twice)
			}
		}
	})
}

// FuzzFormat checks that fmt never changes what a plan does: a valid plan
// formatted is still valid, and plans.Diff finds no change between the two.
// Its own corpus is testdata/fuzz/FuzzFormat; FuzzParse's corpus and the
// example plans seed it too.
func FuzzFormat(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		before, diags := plans.Parse("fuzz.hcl", src)
		if diags.HasErrors() {
			return
		}
		out := plans.Format(src)
		after, diags := plans.Parse("fuzz.hcl", out)
		if diags.HasErrors() {
			t.Fatalf("the formatted plan does not parse: %s\n--- formatted:\n%s", diags.Error(), out)
		}
		if c := plans.Diff(before, after); !c.Empty() {
			t.Fatalf("fmt changed the plan:\n%+v\n--- formatted:\n%s", c, out)
		}
	})
}

// addSeeds adds the example plans, the test plans and FuzzParse's corpus
// as seeds: they hold every construct of the language.
func addSeeds(f *testing.F) {
	f.Helper()
	var files []string
	for _, pat := range []string{"../examples/*.hcl", "../examples/*/*.hcl", "testdata/valid/*.hcl", "testdata/invalid/*.hcl"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	for _, path := range files {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(src)
		}
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzParse/*")
	for _, path := range corpus {
		if src, ok := readCorpusFile(path); ok {
			f.Add(src)
		}
	}
}

// readCorpusFile reads a one-[]byte entry of Go's fuzz corpus format.
func readCorpusFile(path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	_, rest, ok := strings.Cut(string(data), "\n")
	rest = strings.TrimSpace(rest)
	if !ok || !strings.HasPrefix(rest, "[]byte(") || !strings.HasSuffix(rest, ")") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(rest, "[]byte("), ")"))
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}

// evalBound is how long evaluating one fuzzed expression may take. A
// normal one takes microseconds; the bound is generous so that a loaded
// machine does not fail an input, and tight enough to catch the
// quadratic or exponential cases the limits exist for.
const evalBound = 3 * time.Second

// FuzzEval evaluates an expression everywhere a plan evaluates one, as
// the runner does: as a postcondition and as a progress against observed
// values, as a timeout, and as a local; then it renders each result as
// the runner's views do. Each input must finish within evalBound. Its
// corpus is testdata/fuzz/FuzzEval; FuzzParse's corpus seeds it too.
func FuzzEval(f *testing.F) {
	for _, seed := range []string{
		`probe.api.status == 200`,
		`strcontains(probe.log.text, "ready")`,
		`try(tonumber(regex("loading: (\\d+)%", probe.log.last_line)[0]) / 100, null)`,
		`"${1e100000000}s"`,
		`"${var.n * 1e300 * 1e300}s"`,
		`length(range(1e9)) > 0`,
		`format("%999999999d", 1)`,
		`join(",", formatlist("%s-%s", probe.log.lines, probe.log.lines))`,
		`replace(probe.log.text, "", probe.log.text)`,
		`[for a in probe.api.json.items : [for b in probe.api.json.items : a * b]]`,
		`jsondecode(probe.api.body).n + 1`,
		`probe.api.json.n * 2 > 1`,
		`"${1e-100000}"`,
		`parseint("ff", 16) == 255`,
		`((((((1))))))`,
	} {
		f.Add(seed)
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzParse/*")
	for _, path := range corpus {
		if src, ok := readCorpusFile(path); ok && len(src) < 200 {
			f.Add(string(src))
		}
	}
	f.Fuzz(func(t *testing.T, expr string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			evalEverywhere(t, expr)
		}()
		select {
		case <-done:
		case <-time.After(evalBound):
			t.Fatalf("evaluating %q took more than %s", expr, evalBound)
		}
	})
}

// evalEverywhere puts expr in each place a plan evaluates one and
// evaluates what passes the static checks.
func evalEverywhere(t *testing.T, expr string) {
	const head = `variable "n" {
  type    = number
  default = 3
}
locals {
  s = "abc"
}
`
	const probes = `
  probe "http" "api" {
    url = "http://127.0.0.1:1/"
  }
  probe "log" "log" {
    path = "/tmp/lockstep-fuzz.log"
  }
`
	sources := map[string]string{
		"condition": head + `step "wait" "w" {` + probes + `  postcondition {
    condition = (` + expr + `)
    error_message = "got ${jsonencode(` + expr + `)}"
  }
}
`,
		"progress": head + `step "wait" "w" {` + probes + `  postcondition {
    condition = true
  }
  progress = (` + expr + `)
}
`,
		"timeout": head + `step "wait" "w" {
  timeout = (` + expr + `)
  postcondition {
    condition = true
  }
}
`,
		"local": head + `locals {
  x = (` + expr + `)
}
`,
	}
	observed := map[string]cty.Value{
		"probe": cty.ObjectVal(map[string]cty.Value{
			"api": cty.ObjectVal(map[string]cty.Value{
				"status":     cty.NumberIntVal(200),
				"body":       cty.StringVal(`{"n": 1.5e300, "items": [1, 2, 3]}`),
				"json":       cty.ObjectVal(map[string]cty.Value{"n": cty.NumberFloatVal(1.5e300), "items": cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2), cty.NumberIntVal(3)})}),
				"latency_ms": cty.NumberFloatVal(3.5),
			}),
			"log": cty.ObjectVal(map[string]cty.Value{
				"text":      cty.StringVal("loading: 50%\nready 123456789012345678901234567890\n"),
				"lines":     cty.ListVal([]cty.Value{cty.StringVal("loading: 50%"), cty.StringVal("ready 123456789012345678901234567890")}),
				"last_line": cty.StringVal("ready 123456789012345678901234567890"),
			}),
		}),
		"self": cty.EmptyObjectVal,
		"step": cty.EmptyObjectVal,
	}
	for _, where := range []string{"condition", "progress", "timeout", "local"} {
		p, diags := plans.Parse(where+".hcl", []byte(sources[where]))
		if diags.HasErrors() {
			continue
		}
		s, rdiags := p.Resolve(plans.Inputs{})
		for _, v := range s.Locals {
			render(v)
		}
		if rdiags.HasErrors() || len(p.Steps) == 0 {
			continue
		}
		st := p.Steps[0]
		s.Timeout(st)
		ctx := s.EvalContext(observed)
		for _, c := range st.Postconditions {
			v, _ := c.Condition.Value(ctx)
			render(v)
			if c.ErrorMessage != nil {
				m, _ := c.ErrorMessage.Value(ctx)
				render(m)
			}
		}
		if st.Progress != nil {
			v, _ := st.Progress.Value(ctx)
			render(v)
		}
	}
}

// render shows a value as the runner's views and records do: numbers
// printed in full and in short, collections as JSON.
func render(v cty.Value) {
	if v == cty.NilVal {
		return
	}
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() || v.IsNull() {
		return
	}
	switch v.Type() {
	case cty.Number:
		v.AsBigFloat().Text('f', -1)
		v.AsBigFloat().Text('g', 10)
	case cty.String, cty.Bool:
	default:
		ctyjson.Marshal(v, v.Type())
	}
}
