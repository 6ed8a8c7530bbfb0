package plans

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// command checks a shell command: the common checks, and a warning for
// each variable or local put into it without shellquote.
func (c *checker) command(e hcl.Expression, ctx refContext, i int) hcl.Diagnostics {
	v, diags := c.typed(e, ctx, i)
	if v != cty.NilVal && !diags.HasErrors() {
		if _, err := convert.Convert(v, cty.String); err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Command is not a string",
				Detail:   fmt.Sprintf("command is a %s; it must be one shell command line. Join the words, quoting each with shellquote().", v.Type().FriendlyName()),
				Subject:  e.Range().Ptr(),
			})
		}
	}
	if diags.HasErrors() {
		return diags
	}
	// Only a variable's or a local's value can be sensitive or unquoted.
	if !slices.ContainsFunc(c.analysis.of(e).refs, func(r Ref) bool { return r.Root == "var" || r.Root == "local" }) {
		return diags
	}
	if name := c.sensitiveIn(e, map[string]bool{}); name != "" {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Sensitive value in a command line",
			Detail: fmt.Sprintf("%s is written into the command. lockstep shows it as (sensitive) and never puts the script in a command line, but a program the command runs shows its arguments to every user of the host (ps), a launched one for as long as it runs. "+
				"Pass it in the environment instead: env = { SECRET = %s }, and write \"$SECRET\" in the command.", name, name),
			Subject: e.Range().Ptr(),
		})
	}
	var parts []hclsyntax.Expression
	switch t := e.(type) {
	case *hclsyntax.TemplateExpr:
		parts = t.Parts
	case *hclsyntax.TemplateWrapExpr:
		parts = []hclsyntax.Expression{t.Wrapped}
	default:
		return diags
	}
	for _, part := range parts {
		if c.shellClean(part, nil, map[string]bool{}) {
			continue
		}
		var names []string
		for _, tr := range part.Variables() {
			if r := tr.RootName(); r == "var" || r == "local" {
				if n, ok := attrAt(tr, 1); ok {
					names = append(names, r+"."+n)
				}
			}
		}
		if len(names) == 0 {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Unquoted value in a command",
			Detail: fmt.Sprintf("%s goes into the shell command as written: a space, quote or ; in its value changes the command. Write ${shellquote(%s)}.",
				names[0], strings.TrimSpace(string(partSource(c.src, part)))),
			Subject: part.Range().Ptr(),
		})
	}
	return diags
}

// sensitiveIn names the first sensitive variable whose value reaches e,
// directly or through locals ("" when none does).
func (c *checker) sensitiveIn(e hcl.Expression, seen map[string]bool) string {
	for _, r := range c.analysis.of(e).refs {
		name := r.Name
		if name == "" {
			continue
		}
		switch r.Root {
		case "var":
			if v := c.vars[name]; v != nil && v.Sensitive {
				return "var." + name
			}
		case "local":
			if l := c.locals[name]; l != nil && !seen[name] {
				seen[name] = true
				if s := c.sensitiveIn(l.Expr, seen); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

// shellClean tells whether the value of e can only carry a variable's or
// a local's text into a command through shellquote: quoted, or a number
// or bool, or a known harmless string, or built only from such parts.
// tainted holds for-expression names bound to unquoted values; seen guards
// against cycles through locals.
func (c *checker) shellClean(e hclsyntax.Expression, tainted map[string]bool, seen map[string]bool) bool {
	switch e := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.FunctionCallExpr:
		if e.Name == "shellquote" {
			return true
		}
		for _, a := range e.Args {
			if !c.shellClean(a, tainted, seen) {
				return false
			}
		}
		return true
	case *hclsyntax.ScopeTraversalExpr:
		root := e.Traversal.RootName()
		name, _ := attrAt(e.Traversal, 1)
		switch root {
		case "var":
			if v := c.vars[name]; v != nil {
				return v.Type == cty.Number || v.Type == cty.Bool
			}
			return true
		case "local":
			if shellSafe(c.localVals[name]) {
				return true
			}
			l := c.locals[name]
			if l == nil || seen[name] {
				return l == nil
			}
			seen[name] = true
			defer delete(seen, name)
			le, ok := l.Expr.(hclsyntax.Expression)
			return ok && c.shellClean(le, nil, seen)
		}
		return !tainted[root]
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			if !c.shellClean(p, tainted, seen) {
				return false
			}
		}
		return true
	case *hclsyntax.TemplateWrapExpr:
		return c.shellClean(e.Wrapped, tainted, seen)
	case *hclsyntax.ParenthesesExpr:
		return c.shellClean(e.Expression, tainted, seen)
	case *hclsyntax.ConditionalExpr:
		return c.shellClean(e.TrueResult, tainted, seen) && c.shellClean(e.FalseResult, tainted, seen)
	case *hclsyntax.BinaryOpExpr, *hclsyntax.UnaryOpExpr:
		return true // numbers and bools
	case *hclsyntax.TupleConsExpr:
		for _, x := range e.Exprs {
			if !c.shellClean(x, tainted, seen) {
				return false
			}
		}
		return true
	case *hclsyntax.ForExpr:
		inner := map[string]bool{}
		for k, v := range tainted {
			inner[k] = v
		}
		dirty := !c.shellClean(e.CollExpr, tainted, seen)
		if e.KeyVar != "" {
			inner[e.KeyVar] = dirty
		}
		inner[e.ValVar] = dirty
		return c.shellClean(e.ValExpr, inner, seen) && (e.KeyExpr == nil || c.shellClean(e.KeyExpr, inner, seen))
	case *hclsyntax.IndexExpr:
		return c.shellClean(e.Collection, tainted, seen)
	case *hclsyntax.RelativeTraversalExpr:
		return c.shellClean(e.Source, tainted, seen)
	}
	for _, tr := range e.Variables() {
		if r := tr.RootName(); r == "var" || r == "local" || tainted[r] {
			return false
		}
	}
	return true
}

func partSource(src []byte, e hcl.Expression) []byte {
	r := e.Range()
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return nil
	}
	return src[r.Start.Byte:r.End.Byte]
}

var shellSafeString = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// shellSafe tells whether a value needs no quoting whatever it turns out
// to be: numbers and bools, or a known string of harmless characters.
func shellSafe(v cty.Value) bool {
	switch v.Type() {
	case cty.Number, cty.Bool:
		return true
	case cty.String:
		return v.IsKnown() && !v.IsNull() && shellSafeString.MatchString(v.AsString())
	}
	return false
}
