package plans_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"lockstep/plans"
)

// The examples are what users copy: they must be free of errors and of
// warnings alike.
func TestExamplesValidate(t *testing.T) {
	for _, dir := range []string{"../examples/*.hcl", "testdata/valid/*.hcl", "testdata/valid/*.json"} {
		files, err := filepath.Glob(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			t.Run(filepath.Base(path), func(t *testing.T) {
				p, diags := plans.ParseFile(path)
				if len(diags) > 0 {
					t.Fatalf("diagnostics:\n%s", diags.Error())
				}
				if len(p.Steps) == 0 {
					t.Fatal("no steps")
				}
				if _, diags := p.Resolve(plans.Inputs{}); diags.HasErrors() {
					t.Fatalf("resolve with defaults: %s", diags.Error())
				}
				// What users copy is laid out as lockstep fmt lays it out.
				if filepath.Ext(path) == ".hcl" && !bytes.Equal(plans.Format(p.Source), p.Source) {
					t.Errorf("not in canonical layout: run lockstep fmt %s", path)
				}
			})
		}
	}
}
