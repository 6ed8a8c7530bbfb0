package plans

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestSharedRefNames holds the analysis's references, whose names are
// shared by every reference of a text, to references made each on its
// own (refOf, RefsOf): every expression of every seed plan that parses
// reads the same references, in the same order, with the same names and
// traversals, and a step's Reads holds only such references.
func TestSharedRefNames(t *testing.T) {
	plans := 0
	for _, src := range prescanSeeds(t) {
		for _, name := range []string{"t.hcl", "t.hcl.json"} {
			p, diags := Parse(name, src)
			if diags.HasErrors() {
				continue
			}
			plans++
			each := func(what string, got Refs, e hcl.Expression) {
				t.Helper()
				if want := RefsOf(e); !sameRefs(got, want) {
					t.Errorf("%s: %s reads %s, made alone %s", name, what, refsText(got), refsText(want))
				}
			}
			for _, v := range p.Variables {
				for _, c := range v.Validations {
					each("validation", c.Refs, c.Condition)
					each("validation message", c.MessageRefs, c.ErrorMessage)
				}
			}
			for _, l := range p.Locals {
				each("local."+l.Name, l.Refs, l.Expr)
			}
			for _, s := range p.Steps {
				for attr, e := range s.Attrs {
					if attr != "target" {
						each(s.Addr()+"."+attr, s.AttrRefs[attr], e)
					}
				}
				for _, pr := range s.Probes {
					for attr, e := range pr.Attrs {
						each(s.Addr()+" probe "+pr.Name+"."+attr, pr.AttrRefs[attr], e)
					}
				}
				for _, c := range append(slices.Clone(s.Postconditions), s.AbortIfs...) {
					each(s.Addr()+" condition", c.Refs, c.Condition)
					each(s.Addr()+" message", c.MessageRefs, c.ErrorMessage)
				}
				if s.Load != nil {
					for attr, e := range s.Load.Attrs {
						each(s.Addr()+" load."+attr, s.Load.AttrRefs[attr], e)
					}
				}
				for _, r := range s.Reads {
					if !sameRefs(Refs{r}, Refs{refOf(r.Traversal)}) {
						t.Errorf("%s: %s reads %s, made alone %s", name, s.Addr(), refsText(Refs{r}), refsText(Refs{refOf(r.Traversal)}))
					}
				}
			}
		}
	}
	if plans < 30 {
		t.Fatalf("only %d seed plans parse", plans)
	}
}

// sameRefs tells whether a and b hold the same references: names, text
// and the traversal read, in order.
func sameRefs(a, b Refs) bool {
	return slices.EqualFunc(a, b, func(x, y Ref) bool {
		return *x.refNames == *y.refNames && x.Traversal.SourceRange() == y.Traversal.SourceRange() && len(x.Traversal) == len(y.Traversal)
	})
}

func refsText(rs Refs) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%+v@%s", *r.refNames, r.Traversal.SourceRange()))
	}
	return fmt.Sprint(out)
}
