package plans

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// walk visits n as hclsyntax.Walk does, w's Enter and Exit around each
// node in the same order (a for expression's key, value and condition
// inside a hclsyntax.ChildScope), but without making a closure for each
// node: the limits and the analysis walk every expression of every plan.
// A node it does not know it leaves to hclsyntax.Walk.
func walk(n hclsyntax.Node, w hclsyntax.Walker) {
	switch n := n.(type) {
	case *hclsyntax.Body:
		for _, a := range n.Attributes {
			walk(a.Expr, w)
		}
		for _, b := range n.Blocks {
			walk(b.Body, w)
		}
		return
	case *hclsyntax.Attribute:
		walk(n.Expr, w)
		return
	case *hclsyntax.Block:
		walk(n.Body, w)
		return
	case *hclsyntax.LiteralValueExpr, *hclsyntax.ScopeTraversalExpr, *hclsyntax.AnonSymbolExpr, *hclsyntax.ExprSyntaxError,
		*hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr, *hclsyntax.TemplateJoinExpr, *hclsyntax.FunctionCallExpr,
		*hclsyntax.BinaryOpExpr, *hclsyntax.UnaryOpExpr, *hclsyntax.RelativeTraversalExpr, *hclsyntax.ConditionalExpr,
		*hclsyntax.IndexExpr, *hclsyntax.TupleConsExpr, *hclsyntax.ObjectConsExpr, *hclsyntax.ObjectConsKeyExpr,
		*hclsyntax.ParenthesesExpr, *hclsyntax.SplatExpr, *hclsyntax.ForExpr:
	default:
		hclsyntax.Walk(n, w)
		return
	}
	w.Enter(n)
	switch e := n.(type) {
	case *hclsyntax.ObjectConsKeyExpr:
		// Walk visits the wrapped expression only when the key is not a
		// bare name (ObjectConsKeyExpr.walkChildNodes).
		if hcl.ExprAsKeyword(e.Wrapped) == "" {
			walk(e.Wrapped, w)
		}
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			walk(p, w)
		}
	case *hclsyntax.TemplateWrapExpr:
		walk(e.Wrapped, w)
	case *hclsyntax.TemplateJoinExpr:
		walk(e.Tuple, w)
	case *hclsyntax.FunctionCallExpr:
		for _, a := range e.Args {
			walk(a, w)
		}
	case *hclsyntax.BinaryOpExpr:
		walk(e.LHS, w)
		walk(e.RHS, w)
	case *hclsyntax.UnaryOpExpr:
		walk(e.Val, w)
	case *hclsyntax.RelativeTraversalExpr:
		walk(e.Source, w)
	case *hclsyntax.ConditionalExpr:
		walk(e.Condition, w)
		walk(e.TrueResult, w)
		walk(e.FalseResult, w)
	case *hclsyntax.IndexExpr:
		walk(e.Collection, w)
		walk(e.Key, w)
	case *hclsyntax.TupleConsExpr:
		for _, x := range e.Exprs {
			walk(x, w)
		}
	case *hclsyntax.ObjectConsExpr:
		for _, item := range e.Items {
			walk(item.KeyExpr, w)
			walk(item.ValueExpr, w)
		}
	case *hclsyntax.ParenthesesExpr:
		walk(e.Expression, w)
	case *hclsyntax.SplatExpr:
		walk(e.Source, w)
		walk(e.Each, w)
	case *hclsyntax.ForExpr:
		// The parts after the collection see the key and value names
		// (ForExpr.walkChildNodes): a scope, which is not an expression.
		walk(e.CollExpr, w)
		names := map[string]struct{}{}
		for _, v := range []string{e.KeyVar, e.ValVar} {
			if v != "" {
				names[v] = struct{}{}
			}
		}
		for _, x := range []hclsyntax.Expression{e.KeyExpr, e.ValExpr, e.CondExpr} {
			if x != nil {
				scope := hclsyntax.ChildScope{LocalNames: names, Expr: x}
				w.Enter(scope)
				walk(x, w)
				w.Exit(scope)
			}
		}
	}
	w.Exit(n)
}

// fileScan is what the limits' walk of a file (checkAndBound) found in
// each attribute's expression, in one store: the references it reads,
// made as the walk meets each traversal (each expression's once by its
// text, as exprFacts holds them), and the functions it calls. The
// analysis reads it instead of walking the expressions again, or reading
// their traversals a second time.
type fileScan struct {
	refs   Refs
	calls  []*hclsyntax.FunctionCallExpr
	scopes []map[string]struct{} // of the for expressions the walk is in
	roots  []rootScan            // in the order of the walk

	// names holds the names of the references made, by their source
	// text (src's), for analysis.ref to share further.
	names map[string]*refNames
	src   []byte
}

// rootScan is one attribute's expression, its range in the source (so
// that its text is found without reading it again), and where its finds
// are in its fileScan's.
type rootScan struct {
	expr        hclsyntax.Expression
	text        [2]int32 // start and end byte
	refs, calls [2]int32
}

// rootText is r's source text (decoder.source of its range).
func (f *fileScan) rootText(r rootScan) []byte {
	return textAt(f.src, int(r.text[0]), int(r.text[1]))
}

func (f *fileScan) rootRefs(r rootScan) Refs {
	if r.refs[0] == r.refs[1] {
		return nil
	}
	return f.refs[r.refs[0]:r.refs[1]:r.refs[1]]
}

func (f *fileScan) rootCalls(r rootScan) []*hclsyntax.FunctionCallExpr {
	if r.calls[0] == r.calls[1] {
		return nil
	}
	return f.calls[r.calls[0]:r.calls[1]:r.calls[1]]
}

// enter records what n reads or calls, as exprScan.Enter does, the
// reference made at once (analysis.ref): its traversal was just read.
func (f *fileScan) enter(n hclsyntax.Node) {
	switch n := n.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		if declared(f.scopes, n.Traversal.RootName()) {
			return
		}
		rng := n.Traversal.SourceRange()
		f.refs = append(f.refs, sharedRef(n.Traversal, textAt(f.src, rng.Start.Byte, rng.End.Byte), f.names))
	case *hclsyntax.FunctionCallExpr:
		f.calls = append(f.calls, n)
	case hclsyntax.ChildScope:
		f.scopes = append(f.scopes, n.LocalNames)
	}
}

func (f *fileScan) exit(n hclsyntax.Node) {
	if _, ok := n.(hclsyntax.ChildScope); ok {
		f.scopes = f.scopes[:len(f.scopes)-1]
	}
}

// textAt is src from byte start to end, nil when that is not within it
// (a range of another file).
func textAt(src []byte, start, end int) []byte {
	if start < 0 || end > len(src) || start > end {
		return nil
	}
	return src[start:end]
}

// declared tells whether name is one the for expressions around
// declare (scopes, innermost last): such a name is theirs, not the
// root scope's.
func declared(scopes []map[string]struct{}, name string) bool {
	for _, names := range scopes {
		if _, local := names[name]; local {
			return true
		}
	}
	return false
}

// endRoot keeps, of the references made since from, the first of each
// text (Refs.add), in place.
func (f *fileScan) endRoot(from int) {
	kept := f.refs[from:from]
	for _, r := range f.refs[from:] {
		kept = kept.add(r)
	}
	f.refs = f.refs[:from+len(kept)]
}

// exprScan is what one walk of an expression finds: the traversals it
// reads from the root scope, as hclsyntax.Variables lists them, and the
// functions it calls. One scan serves the references (RefsOf) and the
// syntax checks.
type exprScan struct {
	vars   []hcl.Traversal
	calls  []*hclsyntax.FunctionCallExpr
	scopes []map[string]struct{}
}

// scan walks e, reusing s's storage: what it returns is valid until the
// next scan.
func (s *exprScan) scan(e hclsyntax.Expression) *exprScan {
	s.vars, s.calls, s.scopes = s.vars[:0], s.calls[:0], s.scopes[:0]
	walk(e, s)
	return s
}

func (s *exprScan) Enter(n hclsyntax.Node) hcl.Diagnostics {
	switch n := n.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		if declared(s.scopes, n.Traversal.RootName()) {
			return nil
		}
		s.vars = append(s.vars, n.Traversal)
	case *hclsyntax.FunctionCallExpr:
		s.calls = append(s.calls, n)
	case hclsyntax.ChildScope:
		s.scopes = append(s.scopes, n.LocalNames)
	}
	return nil
}

func (s *exprScan) Exit(n hclsyntax.Node) hcl.Diagnostics {
	if _, ok := n.(hclsyntax.ChildScope); ok {
		s.scopes = s.scopes[:len(s.scopes)-1]
	}
	return nil
}
