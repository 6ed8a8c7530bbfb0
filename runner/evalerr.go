package runner

import (
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

// An expression that does not evaluate either cannot be decided yet or
// fails for good, and the two are told apart by what the error is about,
// not by its wording:
//
//   - Not yet: the value it is about is read from what the step observes
//     (probe.*, self.*, or a for expression's element) and is not there:
//     unknown (the probe could not read), null (a json body that is not
//     JSON yet), lacking the key, attribute or index looked up (a json
//     body that has not got the key yet, an empty list), or text in which
//     regex() finds no match yet (the line has not been written). Waiting
//     can change those.
//   - Failure: anything else. A known value of the wrong type ("a" > 3),
//     a function that refuses known arguments (a pattern that does not
//     compile, tonumber("abc")), a null or a
//     missing key in the plan's own values (var, local, earlier steps'
//     outputs): waiting cannot change those.
//
// can() and try() still turn an error into false or a fallback, as users
// mean them to; only a pattern that does not compile counts even there
// (plans.PatternErrors).

// knownFailure is the first error of diags that waiting cannot cure, or
// nil when every error is about a value not observed yet.
func knownFailure(diags hcl.Diagnostics) *hcl.Diagnostic {
	for _, d := range diags {
		if d.Severity == hcl.DiagError && !notThereYet(d) {
			return d
		}
	}
	return nil
}

// notThereYet reports whether an evaluation error is about an observed
// value that is not there yet. HCL names the expression an error is about
// (Diagnostic.Expression, with the EvalContext it was evaluated in): an
// operand, a function's argument, a conditional's condition, a template's
// part, or the lookup, operation or call that failed.
func notThereYet(d *hcl.Diagnostic) bool {
	e, ctx := d.Expression, d.EvalContext
	if e == nil || !readsObserved(e) {
		return false
	}
	v, diags := e.Value(ctx)
	if !diags.HasErrors() {
		// The error is about this value, which evaluates: it was unfit.
		return absent(v)
	}
	// The error comes from evaluating e itself.
	switch e := e.(type) {
	case *hclsyntax.ScopeTraversalExpr, *hclsyntax.RelativeTraversalExpr, *hclsyntax.IndexExpr, *hclsyntax.SplatExpr:
		// A lookup into observed data found nothing there: the key, the
		// attribute or the element has not appeared (yet), or the data
		// has no such structure yet (an answer that is not an object).
		return true
	case *hclsyntax.BinaryOpExpr:
		return anyAbsent(ctx, e.LHS, e.RHS)
	case *hclsyntax.UnaryOpExpr:
		return anyAbsent(ctx, e.Val)
	case *hclsyntax.FunctionCallExpr:
		return anyAbsent(ctx, e.Args...) || notFoundYet(ctx, e)
	}
	return false
}

// notFoundYet reports whether e is a regex() that found no match in text
// the step observes, with a pattern that compiles: the line it looks for
// has not been written yet, as a key not yet in an answer. A log grows; a
// run step's own stdout does not, and its postconditions are evaluated
// once, so there it fails as not met.
func notFoundYet(ctx *hcl.EvalContext, e *hclsyntax.FunctionCallExpr) bool {
	if e.Name != "regex" || len(e.Args) != 2 || !readsObserved(e.Args[1]) || readsObserved(e.Args[0]) {
		return false
	}
	if plans.PatternErrors(e.Args[0], ctx).HasErrors() {
		return false
	}
	pat, diags := e.Args[0].Value(ctx)
	if diags.HasErrors() {
		return false
	}
	text, diags := e.Args[1].Value(ctx)
	if diags.HasErrors() {
		return false
	}
	pat, _ = pat.UnmarkDeep()
	text, _ = text.UnmarkDeep()
	return pat.Type() == cty.String && text.Type() == cty.String && pat.IsKnown() && text.IsKnown() && !pat.IsNull() && !text.IsNull()
}

// anyAbsent reports whether one of the operands, reading observed state,
// is not there.
func anyAbsent(ctx *hcl.EvalContext, es ...hclsyntax.Expression) bool {
	for _, e := range es {
		if !readsObserved(e) {
			continue
		}
		if v, diags := e.Value(ctx); !diags.HasErrors() && absent(v) {
			return true
		}
	}
	return false
}

// absent reports whether v is not there: null, or not wholly known. A
// known collection that holds a null is there: the error is about its
// kind (a whole object where a string goes), not the null inside.
func absent(v cty.Value) bool {
	v, _ = v.UnmarkDeep()
	return v.IsNull() || !v.IsWhollyKnown()
}

// observed reports, from the analysed plan, whether an expression that
// reads refs reads anything but the plan's own values, as readsObserved.
func observed(refs plans.Refs) bool {
	return slices.ContainsFunc(refs, func(r plans.Ref) bool {
		return r.Root != "var" && r.Root != "local" && r.Root != "step"
	})
}

// readsObserved reports whether e (a part of a condition an error is
// about, which the analysis of the plan does not reach) reads anything but the plan's own values
// (var, local, earlier steps' outputs): its probes, its own state, or a
// for expression's element, which most often iterates over them.
func readsObserved(e hcl.Expression) bool {
	for _, tr := range e.Variables() {
		switch tr.RootName() {
		case "var", "local", "step":
		default:
			return true
		}
	}
	return false
}
