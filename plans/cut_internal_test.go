package plans

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// cutCases are files whose every line could look like the end of a top-level
// item to a reader that does not follow hcl's scanner.
var cutCases = []string{
	"step \"run\" \"a\" {\n  command = \"x\"\n}\nstep \"run\" \"b\" {\n  command = \"y\"\n}\n",
	"a = 1\nb = 2\n\n\n# c\n// d\n/* e\n}\n*/\nf = 3\n",
	"a = <<EOT\n}\nb = 1\nEOT\nc = 2\n",
	"a = <<-EOT\n  }\n  ${x}\n  EOT\nb = [\n  1,\n  2,\n]\n",
	"a = \"${ {b = 1} }\"\nc = {\n  d = 1\n}\n",
	"a = (\n  1 +\n  2\n)\nb = x ? [\n] : []\n",
	"step \"run\" \"a\" {\n  command = <<EOT\n}\nstep \"run\" \"b\" {\nEOT\n}\n",
	"a = 1\r\nb = {\r\n  c = 2\r\n}\r\n",
	"\xef\xbb\xbfa = 1\nb = 2\n",
	"a = \"%{ if x }\n%{ endif }\"\nb = 1\n",
	"a = 1\nb = \"\xc3\xa9\"\nc = 2\n",
	"x {\n  y {\n    z = 1\n  }\n}\nw {}\n",
	"x \"l1\" \"l2\" {\n}\n\n\n\nx \"l3\" {\n  a = [for k, v in m : v if k != \"}\"]\n}\n",
}

// assertCutIsWhole fails unless src, cut wherever it may be (every
// possible cut at once), parses into the tree hcl makes of it whole, with
// the same context for a message at every offset; a file whose pieces do
// not parse must give parseCut's nil, for the whole parse to report it.
// It reports whether the pieces parsed.
func assertCutIsWhole(t *testing.T, src []byte) bool {
	t.Helper()
	_, _, cuts, ok := nativeScan(src, 1)
	if !ok || len(cuts) == 0 {
		return false
	}
	cut := parseCut("t.hcl", src, cuts, nil)
	if cut == nil {
		return false
	}
	whole, diags := hclsyntax.ParseConfig(src, "t.hcl", hcl.InitialPos)
	if len(diags) > 0 {
		t.Fatalf("the pieces parsed, the whole did not (%s):\n%q", diags.Error(), src)
	}
	if !reflect.DeepEqual(cut.Body, whole.Body) {
		t.Fatalf("cut at %v, the tree differs from the whole file's:\n%q", cuts, src)
	}
	type contexter interface {
		ContextString(int) string
		ContextDefRange(int) hcl.Range
	}
	wn, cn := whole.Nav.(contexter), cut.Nav.(contexter)
	for off := range len(src) + 1 {
		if w, c := wn.ContextString(off), cn.ContextString(off); w != c {
			t.Fatalf("at byte %d the context is %q, whole %q:\n%q", off, c, w, src)
		}
		if w, c := wn.ContextDefRange(off), cn.ContextDefRange(off); w != c {
			t.Fatalf("at byte %d the context's range is %v, whole %v:\n%q", off, c, w, src)
		}
	}
	return true
}

// TestParseCutIsParseWhole: a file parsed in pieces is the file parsed
// whole, on the cases above, the example and test plans and the fuzz
// corpora; and a long plan is parsed in pieces, as Parse reads it.
func TestParseCutIsParseWhole(t *testing.T) {
	parsed := 0
	for _, src := range cutCases {
		if assertCutIsWhole(t, []byte(src)) {
			parsed++
		}
	}
	for _, src := range prescanSeeds(t) {
		if assertCutIsWhole(t, src) {
			parsed++
		}
	}
	if parsed < 50 {
		t.Errorf("only %d files were parsed in pieces", parsed)
	}

	var long strings.Builder
	for i := range 200 {
		fmt.Fprintf(&long, "step \"run\" \"s%d\" {\n  command = \"echo %d\"\n}\n", i, i)
	}
	src := []byte(long.String())
	cuts, diags := checkSource("long.hcl", src, MaxPlanBytes)
	if diags.HasErrors() || len(cuts) < 2 {
		t.Fatalf("a %d-byte plan is cut at %v (%v)", len(src), cuts, diags)
	}
	if _, ok := parseCut("long.hcl", src, cuts, nil).Nav.(*cutNav); !ok {
		t.Fatal("the long plan was not parsed in pieces")
	}
}

// TestParseCutLeavesErrorsToTheWhole: a file with a mistake in one piece
// is parsed whole, so its messages are hcl's, where hcl puts them (an
// unclosed block reaches the end of the file).
func TestParseCutLeavesErrorsToTheWhole(t *testing.T) {
	for _, src := range []string{
		"a = 1\nb = \nc = 2\n",
		"x {\n  a = 1\n\ny {\n}\n",
		"a = 1\nb = 2\na = 3\n",
		"x {\n}\n}\ny {\n}\n",
	} {
		_, _, cuts, _ := nativeScan([]byte(src), 1)
		if f := parseCut("t.hcl", []byte(src), cuts, nil); f != nil {
			t.Errorf("%q parsed in pieces without a word", src)
		}
		_, want := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
		_, _, got := parseScanned("t.hcl", []byte(src), MaxPlanBytes)
		if want.Error() != got.Error() {
			t.Errorf("%q: Parse says %q, hcl %q", src, got.Error(), want.Error())
		}
	}
}

// FuzzParseCut checks parseCut against hcl's parse of the whole file on
// arbitrary bytes.
func FuzzParseCut(f *testing.F) {
	addScanSeeds(f, cutCases)
	f.Fuzz(func(t *testing.T, src []byte) {
		assertCutIsWhole(t, src)
	})
}
