package plans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lockstep/plans"
)

// TestDiffGolden compares testdata/diff/NAME/old.hcl with new.hcl and
// renders the changes against want.txt and want.md (go test -update
// rewrites them). Each case covers one kind of change; glm5 is a
// realistic pull request on the reference plan.
func TestDiffGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/diff/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 8 {
		t.Fatalf("found %d cases in testdata/diff, want at least 8", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			old := parseValid(t, filepath.Join(dir, "old.hcl"))
			new := parseValid(t, filepath.Join(dir, "new.hcl"))
			for _, c := range []struct{ format, file string }{{"text", "want.txt"}, {"markdown", "want.md"}} {
				got, err := plans.ExplainDiff(old, new, c.format)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := plans.ExplainDiff(old, new, c.format)
				if again != got {
					t.Fatal("ExplainDiff gave two different answers for the same input")
				}
				golden := filepath.Join(dir, c.file)
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("ExplainDiff differs from %s (go test -update rewrites it):\n%s", golden, got)
				}
			}
		})
	}
}

func parseValid(t *testing.T, path string) *plans.Plan {
	t.Helper()
	p, diags := plans.ParseFile(path)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	return p
}

// TestDiffHidesSensitive: a sensitive default never shows, changed or
// not, nor when the variable stops or starts being sensitive.
func TestDiffHidesSensitive(t *testing.T) {
	before := `variable "token" {
  type      = string
  sensitive = true
  default   = "hunter2"
}
`
	for _, after := range []string{
		`variable "token" {
  type      = string
  sensitive = true
  default   = "correct-horse"
}
`,
		`variable "token" {
  type    = string
  default = "correct-horse"
}
`,
	} {
		old := parseSource(t, "old.hcl", before)
		new := parseSource(t, "new.hcl", after)
		for _, c := range []struct{ old, new *plans.Plan }{{old, new}, {new, old}} {
			for _, format := range []string{"text", "markdown"} {
				out, err := plans.ExplainDiff(c.old, c.new, format)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out, "hunter2") || strings.Contains(out, "correct-horse") {
					t.Errorf("%s diff shows a sensitive default:\n%s", format, out)
				}
				if !strings.Contains(out, "(sensitive)") {
					t.Errorf("%s diff does not say the default changed:\n%s", format, out)
				}
			}
		}
	}
}

// TestDiffSteps checks the structure the renderings come from: positions,
// moves, and a step that changed kind reading as one removed and one added.
func TestDiffSteps(t *testing.T) {
	old := parseSource(t, "old.hcl", `
step "run" "a" { command = "a" }
step "run" "b" { command = "b" }
step "run" "c" { command = "c" }
`)
	new := parseSource(t, "new.hcl", `
step "run" "b" { command = "b" }
step "run" "a" { command = "a" }
step "assert" "c" {
  postcondition { condition = true }
}
`)
	c := plans.Diff(old, new)
	var got []string
	for _, s := range c.Steps {
		got = append(got, fmt.Sprintf("%s %s %d->%d moved=%v", s.Addr, s.Kind, s.OldPos, s.NewPos, s.Moved))
	}
	want := []string{
		"run.a changed 1->2 moved=true",
		"assert.c added 0->3 moved=false",
		"run.c removed 3->0 moved=false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c.Empty() {
		t.Error("Empty() is true for plans that differ")
	}
	if same := plans.Diff(old, old); !same.Empty() || !same.SameSource {
		t.Errorf("a plan compared with itself: Empty %v, SameSource %v", same.Empty(), same.SameSource)
	}
	if _, err := c.Render("html"); err == nil {
		t.Error("Render accepted format html")
	}
}

func parseSource(t *testing.T, name, src string) *plans.Plan {
	t.Helper()
	p, diags := plans.Parse(name, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return p
}

// docs/ci.md shows the glm5 case as a sample of what a pull request gets;
// it must stay what explain --diff prints.
func TestDiffSampleInDocs(t *testing.T) {
	want, err := os.ReadFile("testdata/diff/glm5/want.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```markdown\n"+string(want)+"```\n") {
		t.Errorf("docs/ci.md does not show testdata/diff/glm5/want.md as its sample; copy it there:\n%s", want)
	}
}

// A plan in the JSON syntax diffs as one in HCL: values without their
// JSON quotes.
func TestDiffJSONSyntax(t *testing.T) {
	src, err := os.ReadFile("testdata/valid/simple.json")
	if err != nil {
		t.Fatal(err)
	}
	old := parseSource(t, "old.json", string(src))
	new := parseSource(t, "new.json", strings.Replace(string(src), `"echo `, `"printf `, 1))
	out, err := plans.ExplainDiff(old, new, "text")
	if err != nil {
		t.Fatal(err)
	}
	want := "    command: echo ${shellquote(local.greeting)} → printf ${shellquote(local.greeting)}\n"
	if !strings.Contains(out, want) {
		t.Errorf("JSON diff does not show\n%s\nit shows:\n%s", want, out)
	}
}
