package plans_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

// The schema is what docs, fmt, explain and validate read: every entry
// needs a doc line, names must be unique, and types must be set.
func TestLanguageIsComplete(t *testing.T) {
	l := plans.Language()
	checkAttrs := func(where string, attrs []plans.Attr) {
		seen := map[string]bool{}
		for _, a := range attrs {
			if seen[a.Name] {
				t.Errorf("%s: attribute %s twice", where, a.Name)
			}
			seen[a.Name] = true
			if a.Doc == "" {
				t.Errorf("%s: attribute %s has no doc", where, a.Name)
			}
		}
	}
	checkOutputs := func(where string, outs []plans.Output) {
		for _, o := range outs {
			if o.Doc == "" || o.Type == cty.NilType {
				t.Errorf("%s: output %s needs a doc and a type", where, o.Name)
			}
		}
	}
	var walk func(where string, b plans.Block)
	walk = func(where string, b plans.Block) {
		if b.Doc == "" && where != "step (common)" {
			t.Errorf("%s: block %s has no doc", where, b.Type)
		}
		checkAttrs(where+" "+b.Type, b.Attrs)
		for _, c := range b.Blocks {
			walk(where+" "+b.Type, c)
		}
	}
	for _, b := range l.Blocks {
		walk("top", b)
	}
	walk("step (common)", l.Step)
	for _, k := range l.Steps {
		if k.Doc == "" {
			t.Errorf("step kind %s has no doc", k.Name)
		}
		checkAttrs("step "+k.Name, append(append([]plans.Attr{}, l.Step.Attrs...), k.Attrs...))
		checkOutputs("step "+k.Name, k.Self)
		for _, b := range k.Blocks {
			walk("step "+k.Name, b)
		}
	}
	for _, p := range l.Probes {
		checkAttrs("probe "+p.Name, p.Attrs)
		checkOutputs("probe "+p.Name, p.Outputs)
		if p.Doc == "" {
			t.Errorf("probe %s has no doc", p.Name)
		}
	}
	for _, ld := range l.Loads {
		checkAttrs("load "+ld.Name, ld.Attrs)
	}
	if l.StepKind("wait").DefaultTimeout != "5m" || l.StepKind("wait").DefaultInterval != "1s" {
		t.Error("wait's defaults are not 5m and 1s")
	}
	// Language returns a fresh value: changing one does not change the next.
	l.Steps[0].Name = "changed"
	if plans.Language().Steps[0].Name == "changed" {
		t.Error("Language() shares state between calls")
	}
}

// testdata/valid/features.hcl is meant to use every attribute of every
// probe and load; it keeps the decoder honest about the schema.
func TestFeaturesPlanCoversTheSchema(t *testing.T) {
	src, err := os.ReadFile("testdata/valid/features.hcl")
	if err != nil {
		t.Fatal(err)
	}
	l := plans.Language()
	for _, p := range l.Probes {
		if !regexp.MustCompile(`probe "` + p.Name + `"`).Match(src) {
			t.Errorf("features.hcl has no %s probe", p.Name)
		}
		for _, a := range p.Attrs {
			if !regexp.MustCompile(`(?m)^\s+` + a.Name + `\s+=`).Match(src) {
				t.Errorf("features.hcl never sets %s (probe %s)", a.Name, p.Name)
			}
		}
	}
	for _, ld := range l.Loads {
		for _, a := range ld.Attrs {
			if !regexp.MustCompile(`(?m)^\s+` + a.Name + `\s+=`).Match(src) {
				t.Errorf("features.hcl never sets %s (load %s)", a.Name, ld.Name)
			}
		}
	}
}
