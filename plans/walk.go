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
// each attribute's expression, as exprScan finds it, in one store: the
// analysis reads it instead of walking the expressions again.
type fileScan struct {
	exprScan
	roots []rootScan // in the order of the walk
}

// rootScan is one attribute's expression and where its finds are in its
// fileScan's.
type rootScan struct {
	expr        hclsyntax.Expression
	vars, calls [2]int32
}

func (f *fileScan) vars(r rootScan) []hcl.Traversal {
	return f.exprScan.vars[r.vars[0]:r.vars[1]:r.vars[1]]
}

func (f *fileScan) calls(r rootScan) []*hclsyntax.FunctionCallExpr {
	if r.calls[0] == r.calls[1] {
		return nil
	}
	return f.exprScan.calls[r.calls[0]:r.calls[1]:r.calls[1]]
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
		// A name a for expression declares is its own, not the root's.
		if len(s.scopes) > 0 {
			name := n.Traversal.RootName()
			for _, names := range s.scopes {
				if _, local := names[name]; local {
					return nil
				}
			}
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
