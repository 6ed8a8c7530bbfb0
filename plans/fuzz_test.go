package plans_test

import (
	"testing"

	"lockstep/plans"
)

// FuzzParse feeds arbitrary files through everything a plan goes through
// before it runs: parse and static checks (as HCL and as JSON), variable
// resolution, explain in both formats, and fmt. Nothing may panic, and fmt
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
			for _, format := range []string{"text", "markdown"} {
				if _, err := plans.Explain(p, s, format); err != nil {
					t.Errorf("Explain(%s): %v", format, err)
				}
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
