package runner

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

func TestRenderCutsWholeCharacters(t *testing.T) {
	// 199 bytes, then a three-byte character across the 200-byte cut.
	s := strings.Repeat("a", 199) + strings.Repeat("…", 10)
	got := Render(cty.StringVal(s))
	want := `"` + strings.Repeat("a", 199) + `…"`
	if got != want || !utf8.ValidString(got) {
		t.Errorf("Render = %q, want %q", got, want)
	}
}
