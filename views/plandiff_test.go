package views_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lockstep/plans"
	"lockstep/views"
)

// TestDiffGolden compares testdata/plandiff/NAME/old.hcl with new.hcl and
// renders the changes against want.txt and want.md (go test -update
// rewrites them). Each case covers one kind of change; glm5 is a
// realistic pull request on the reference plan.
func TestDiffGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/plandiff/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 8 {
		t.Fatalf("found %d cases in testdata/plandiff, want at least 8", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			old := parseValid(t, filepath.Join(dir, "old.hcl"))
			new := parseValid(t, filepath.Join(dir, "new.hcl"))
			for _, c := range []struct {
				format views.Format
				file   string
			}{{views.Text, "want.txt"}, {views.Markdown, "want.md"}} {
				got, err := views.PlanDiff(plans.Diff(old, new), c.format)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := views.PlanDiff(plans.Diff(old, new), c.format)
				if again != got {
					t.Fatal("PlanDiff gave two different answers for the same input")
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
					t.Errorf("PlanDiff differs from %s (go test -update rewrites it):\n%s", golden, got)
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
			for _, format := range []views.Format{views.Text, views.Markdown, views.JSON} {
				out, err := views.PlanDiff(plans.Diff(c.old, c.new), format)
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

// docs/ci.md shows the glm5 case as a sample of what a pull request gets;
// it must stay what explain --diff prints.
func TestDiffSampleInDocs(t *testing.T) {
	want, err := os.ReadFile("testdata/plandiff/glm5/want.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```markdown\n"+string(want)+"```\n") {
		t.Errorf("docs/ci.md does not show testdata/plandiff/glm5/want.md as its sample; copy it there:\n%s", want)
	}
}

// A plan in the JSON syntax diffs as one in HCL: values without their
// JSON quotes.
func TestDiffJSONSyntax(t *testing.T) {
	src, err := os.ReadFile("../plans/testdata/valid/simple.json")
	if err != nil {
		t.Fatal(err)
	}
	old := parseSource(t, "old.json", string(src))
	new := parseSource(t, "new.json", strings.Replace(string(src), `"echo `, `"printf `, 1))
	out, err := views.PlanDiff(plans.Diff(old, new), views.Text)
	if err != nil {
		t.Fatal(err)
	}
	want := "    command: echo ${shellquote(local.greeting)} → printf ${shellquote(local.greeting)}\n"
	if !strings.Contains(out, want) {
		t.Errorf("JSON diff does not show\n%s\nit shows:\n%s", want, out)
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

func TestPlanDiffRefusesAnUnknownFormat(t *testing.T) {
	p := parseSource(t, "p.hcl", `step "run" "a" { command = "a" }`)
	if _, err := views.PlanDiff(plans.Diff(p, p), 0); err == nil {
		t.Error("PlanDiff accepted an unknown format")
	}
}

// The JSON of a plan diff is its Changes, kinds as words, and of an
// explanation the Explanation: what a script reads is what the text says.
func TestJSONIsTheData(t *testing.T) {
	old := parseSource(t, "old.hcl", `step "run" "a" { command = "a" }`)
	new := parseSource(t, "new.hcl", `
step "run" "a" {
  command = "a"
  timeout = "5s"
}
step "assert" "b" {
  postcondition { condition = true }
}
`)
	out, err := views.PlanDiff(plans.Diff(old, new), views.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Steps []struct {
			Addr    string `json:"addr"`
			Kind    string `json:"kind"`
			Changes []struct{ Kind, What, Old, New string }
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(c.Steps) != 2 || c.Steps[0].Kind != "changed" || c.Steps[1].Kind != "added" || c.Steps[1].Addr != "assert.b" {
		t.Fatalf("steps %+v", c.Steps)
	}
	if ch := c.Steps[0].Changes; len(ch) != 1 || ch[0].What != "timeout" || !strings.HasSuffix(ch[0].Old, " (default)") || ch[0].New != "5s" {
		t.Errorf("run.a changes %+v", ch)
	}

	out, err = views.Explain(plans.Explain(new, nil), views.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var x plans.Explanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err)
	}
	if want := plans.Explain(new, nil); !reflect.DeepEqual(x, want) {
		t.Errorf("explain json reads back as\n%+v\nwant\n%+v", x, want)
	}
}
