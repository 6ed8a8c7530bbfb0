package plans_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lockstep/plans"
)

// TestExplainGolden explains the reference plans, unresolved and resolved
// with defaults, in both formats, against testdata/explain (-update
// rewrites). The quickstart grows with the demo; cmd/lockstep's explain
// script follows it.
func TestExplainGolden(t *testing.T) {
	files := []string{"../examples/glm5.hcl", "../examples/vllm.hcl", "testdata/valid/features.hcl"}
	for _, path := range files {
		p, diags := plans.ParseFile(path)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
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
				format := map[string]string{"txt": "text", "md": "markdown"}[c.ext]
				got, err := plans.Explain(p, c.scope, format)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := plans.Explain(p, c.scope, format)
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

func TestExplainHidesSensitive(t *testing.T) {
	p, _ := plans.ParseFile("testdata/valid/features.hcl")
	s, _ := p.Resolve(plans.Inputs{})
	for _, format := range []string{"text", "markdown"} {
		for _, scope := range []*plans.Scope{s, nil} {
			out, err := plans.Explain(p, scope, format)
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
	if _, err := plans.Explain(p, s, "html"); err == nil {
		t.Error("Explain accepted format html")
	}
}
