package plans_test

import (
	"os/exec"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

func TestShellQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "a b", "it's", `"; rm -rf / #`, "$(id)", "`id`", "new\nline", `back\slash`, "''"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+plans.ShellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if string(out) != s {
			t.Errorf("sh read %q back as %q", s, out)
		}
	}
}

func TestFunctionsMatchLanguage(t *testing.T) {
	funcs := plans.Functions()
	docs := plans.Language().Functions
	if len(docs) != len(funcs) {
		t.Errorf("Language() documents %d functions, Functions() has %d", len(docs), len(funcs))
	}
	for _, f := range docs {
		if _, ok := funcs[f.Name]; !ok {
			t.Errorf("Language() documents %q, which Functions() lacks", f.Name)
		}
	}
}

func TestFunctions(t *testing.T) {
	funcs := plans.Functions()
	call := func(name string, args ...cty.Value) cty.Value {
		t.Helper()
		v, err := funcs[name].Call(args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	if got := call("strcontains", cty.StringVal("ready to serve"), cty.StringVal("ready")); !got.True() {
		t.Error("strcontains did not find a substring")
	}
	if got := call("length", cty.StringVal("héllo")); !got.Equals(cty.NumberIntVal(5)).True() {
		t.Errorf("length(string) = %#v, want 5", got)
	}
	if got := call("length", cty.ListVal([]cty.Value{cty.True, cty.False})); !got.Equals(cty.NumberIntVal(2)).True() {
		t.Errorf("length(list) = %#v, want 2", got)
	}
	if got := call("shellquote", cty.StringVal("it's")); got.AsString() != `'it'\''s'` {
		t.Errorf("shellquote = %s", got.AsString())
	}
}
