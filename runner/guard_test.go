package runner

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// The guard replaces a secret where it stands as a word of its own in
// what the world said, and nowhere else: not inside a longer word or
// number, not in numbers, bools or keys.
func TestGuard(t *testing.T) {
	g := newGuard([]string{"true", "1593", "step", "0000", "confirmed", "ab", "sk-live-9x"})
	texts := []struct{ in, want string }{
		{"ready=true", "ready=(sensitive)"},
		{"untrue and trueish", "untrue and trueish"},
		{"port 1593, not 15930 or 11593", "port (sensitive), not 15930 or 11593"},
		{"steps step_started step.", "steps step_started (sensitive)."},
		{"x0000 0000 00000", "x0000 (sensitive) 00000"},
		{"unconfirmed confirmed", "unconfirmed (sensitive)"},
		{"ab cab", "ab cab"}, // too short to look for
		{"Bearer sk-live-9x;", "Bearer (sensitive);"},
		{"key=sk-live-9x&n=1", "key=(sensitive)&n=1"},
		{"é1593", "é1593"},
		{"", ""},
	}
	for _, tt := range texts {
		if got := g.text(tt.in); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	v := cty.ObjectVal(map[string]cty.Value{
		"true":  cty.True,
		"n":     cty.NumberIntVal(1593),
		"s":     cty.StringVal("1593"),
		"log":   cty.StringVal("token sk-live-9x ok"),
		"items": cty.ListVal([]cty.Value{cty.StringVal("step"), cty.StringVal("steps")}),
	})
	want := `{"items":["(sensitive)","steps"],"log":"token (sensitive) ok","n":1593,"s":"(sensitive)","true":true}`
	if got := g.render(v); got != want {
		t.Errorf("render = %s, want %s", got, want)
	}
	// A secret that Render would cut in half is replaced before the cut.
	long := cty.StringVal(strings.Repeat("x ", 97) + "sk-live-9x")
	if got := g.render(long); strings.Contains(got, "sk-") {
		t.Errorf("render of a cut string shows part of the secret: %s", got)
	}
}
