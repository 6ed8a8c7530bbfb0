package plans

import (
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
