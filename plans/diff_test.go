package plans_test

import (
	"fmt"
	"strings"
	"testing"

	"lockstep/plans"
)

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
}

func parseSource(t *testing.T, name, src string) *plans.Plan {
	t.Helper()
	p, diags := plans.Parse(name, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return p
}
