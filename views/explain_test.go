package views_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lockstep/plans"
	"lockstep/views"
)

// TestExplainGolden explains the reference plans, unresolved and resolved
// with defaults, in both formats, against testdata/explain (-update
// rewrites). The quickstart grows with the demo; cmd/lockstep's explain
// script follows it.
func TestExplainGolden(t *testing.T) {
	files := []string{"../examples/glm5.hcl", "../examples/vllm.hcl", features}
	for _, path := range files {
		p := parsePlan(t, path)
		scope, diags := p.Resolve(plans.Inputs{})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		base := strings.TrimSuffix(filepath.Base(path), ".hcl")
		for _, c := range []struct {
			name  string
			scope *plans.Scope
			ext   string
		}{
			{"resolved", scope, "txt"}, {"resolved", scope, "md"}, {"unresolved", nil, "txt"},
		} {
			golden := filepath.Join("testdata/explain", base+"."+c.name+"."+c.ext)
			t.Run(filepath.Base(golden), func(t *testing.T) {
				format := map[string]views.Format{"txt": views.Text, "md": views.Markdown}[c.ext]
				got, err := views.Explain(plans.Explain(p, c.scope), format)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := views.Explain(plans.Explain(p, c.scope), format)
				if again != got {
					t.Fatal("Explain gave two different answers for the same input")
				}
				if *update {
					if err := os.MkdirAll("testdata/explain", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("Explain differs from %s (go test -update rewrites it):\n%s", golden, got)
				}
			})
		}
	}
}

// features is the plan of plans' tests that uses every feature; its
// goldens name it as plans' tests do.
const features = "testdata/valid/features.hcl"

// parsePlan parses a plan of the examples, or one of plans' test plans
// (named as plans' own tests name it, so the goldens say the same).
func parsePlan(t *testing.T, path string) *plans.Plan {
	t.Helper()
	file := path
	if strings.HasPrefix(path, "testdata/valid/") {
		file = filepath.Join("..", "plans", path)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, diags := plans.Parse(path, src)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	return p
}

func TestExplainHidesSensitive(t *testing.T) {
	p := parsePlan(t, features)
	s, _ := p.Resolve(plans.Inputs{})
	for _, format := range []views.Format{views.Text, views.Markdown, views.JSON} {
		for _, scope := range []*plans.Scope{s, nil} {
			out, err := views.Explain(plans.Explain(p, scope), format)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("%s explanation shows the sensitive default:\n%s", format, out)
			}
			if scope != nil && !strings.Contains(out, "(sensitive)") {
				t.Errorf("%s explanation does not say a value is sensitive", format)
			}
		}
	}
	if _, err := views.Explain(plans.Explain(p, s), 0); err == nil {
		t.Error("Explain accepted an unknown format")
	}
}
