package plans

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestBodyContent: every body of the seed plans reads the same through
// bodyContent as through hcl's Content, with each schema the decoder uses
// and with schemas that lack or require what the body holds: the same
// attributes, blocks and diagnostics.
func TestBodyContent(t *testing.T) {
	d := &decoder{lang: Language()}
	schemas := []*hcl.BodySchema{d.stepSchema(), d.probeSchema(), {}}
	for _, b := range d.lang.Blocks {
		schemas = append(schemas, schemaFor(b.Attrs, b.Blocks))
	}
	required := schemaFor([]Attr{{Name: "command"}, {Name: "url"}}, nil)
	required.Attributes[0].Required = true
	schemas = append(schemas, required, schemaFor(nil, []Block{{Type: "step", Labels: []string{"KIND"}}, {Type: "probe", Labels: []string{"A", "B", "C"}}}))
	n := 0
	for _, src := range prescanSeeds(t) {
		file, diags := hclsyntax.ParseConfig(src, "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			continue
		}
		hclsyntax.VisitAll(file.Body.(*hclsyntax.Body), func(node hclsyntax.Node) hcl.Diagnostics {
			body, ok := node.(*hclsyntax.Body)
			if !ok {
				return nil
			}
			for _, s := range schemas {
				n++
				got, gotDiags := bodyContent(body, s)
				want, wantDiags := body.Content(s)
				if !reflect.DeepEqual(got, want) || diagSet(gotDiags) != diagSet(wantDiags) {
					t.Fatalf("%s: bodyContent = %+v, %v; Content = %+v, %v", body.SrcRange, got, gotDiags, want, wantDiags)
				}
			}
			return nil
		})
	}
	if n < 1000 {
		t.Fatalf("only %d bodies read", n)
	}
}

// diagSet is diags in order of their text: hcl reports a body's
// attributes in the order of a map.
func diagSet(diags hcl.Diagnostics) string {
	var out []string
	for _, d := range diags {
		out = append(out, d.Subject.String()+": "+d.Summary+"; "+d.Detail)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// TestDirectReadsAsContent: every seed plan decodes into the same plan,
// with the same diagnostics, whether the blocks that hold only what their
// kind takes are read straight from the syntax tree (decodeStep,
// decodeProbe, decodeLoad, decodeCondition) or each through hcl's Content.
func TestDirectReadsAsContent(t *testing.T) {
	valid := 0
	for _, src := range prescanSeeds(t) {
		file, roots, diags := parseScanned("t.hcl", src, MaxPlanBytes)
		if diags.HasErrors() || file.Body == nil {
			continue
		}
		// One tree decoded twice: two parses never compare equal (their
		// operators hold functions).
		decode := func() (*Plan, hcl.Diagnostics) {
			p := &Plan{Filename: "t.hcl", Source: src, Name: "t", Files: map[string]*hcl.File{"t.hcl": file}}
			return p, decodeBody(p, file.Body, roots)
		}
		direct, directDiags := decode()
		readDirect = false
		viaContent, contentDiags := decode()
		readDirect = true
		if got, want := diagSet(directDiags), diagSet(contentDiags); got != want {
			t.Fatalf("%s\ndiagnostics read directly:\n%s\nthrough Content:\n%s", src, got, want)
		}
		for _, p := range []*Plan{direct, viaContent} {
			for _, s := range p.Steps {
				// Gathered from maps: in no set order.
				slices.SortFunc(s.Reads, func(a, b Ref) int {
					return cmp.Or(cmp.Compare(a.Text, b.Text), cmp.Compare(a.Traversal.SourceRange().Start.Byte, b.Traversal.SourceRange().Start.Byte))
				})
			}
		}
		if !reflect.DeepEqual(direct, viaContent) {
			t.Fatalf("%s\nthe plan read directly differs from the one read through Content", src)
		}
		if !directDiags.HasErrors() && len(direct.Steps) > 0 {
			valid++
		}
	}
	if valid < 20 {
		t.Fatalf("only %d valid plans with steps read", valid)
	}
}
