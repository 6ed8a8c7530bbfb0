package plans

import (
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Redacted is what a sensitive value is shown as.
const Redacted = "(sensitive)"

// Shown is an expression's value as a person may see it: Text with every
// sensitive part replaced by (sensitive), decided by the Sensitive mark on
// the values (go-cty carries marks through every function, operator and
// template), never by looking for a secret's text in the result.
type Shown struct {
	Text string
	// Hidden is the real text of each part shown as (sensitive): what a
	// process that received it might echo back (a server logging the
	// header it got), for the runner's guard on what the world says.
	Hidden []string
}

// IsSensitive reports whether v is, or holds, a sensitive value.
func IsSensitive(v cty.Value) bool {
	if !v.IsMarked() && !v.ContainsMarked() {
		return false
	}
	_, marks := v.UnmarkDeep()
	_, ok := marks[Sensitive]
	return ok
}

// Show evaluates expr in ctx and renders it for a person. A value with
// nothing sensitive in it shows as its text (a string bare, a number as
// written, a collection as HCL). A sensitive one is taken apart where its
// structure says which part is which: a template part by part, a
// conditional by the branch taken (when the condition itself is not
// sensitive), shellquote and format with (sensitive) passed for their
// sensitive arguments. Anything else that is sensitive (upper(var.token),
// base64encode(...), var.token + 1) shows whole as (sensitive).
func Show(expr hcl.Expression, ctx *hcl.EvalContext) (Shown, hcl.Diagnostics) {
	var sh Shown
	text, diags := show(expr, ctx, &sh)
	sh.Text = text
	return sh, diags
}

// transparent are the functions whose result shows its string arguments
// as they are, so that shellquote("Bearer ${var.token}") shows as
// 'Bearer (sensitive)' rather than as (sensitive) whole.
var transparent = map[string]bool{"shellquote": true, "format": true}

func show(expr hcl.Expression, ctx *hcl.EvalContext, sh *Shown) (string, hcl.Diagnostics) {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return "", diags
	}
	if !IsSensitive(v) {
		return valueString(v), diags
	}
	switch e := expr.(type) {
	case *hclsyntax.TemplateWrapExpr:
		return show(e.Wrapped, ctx, sh)
	case *hclsyntax.ParenthesesExpr:
		return show(e.Expression, ctx, sh)
	case *hclsyntax.TemplateExpr:
		var b []byte
		for _, p := range e.Parts {
			t, ds := show(p, ctx, sh)
			if ds.HasErrors() {
				return "", ds
			}
			b = append(b, t...)
		}
		return string(b), diags
	case *hclsyntax.ConditionalExpr:
		c, ds := e.Condition.Value(ctx)
		if !ds.HasErrors() && c.IsKnown() && !c.IsNull() && !IsSensitive(c) {
			if b, err := convert.Convert(c, cty.Bool); err == nil {
				if b.True() {
					return show(e.TrueResult, ctx, sh)
				}
				return show(e.FalseResult, ctx, sh)
			}
		}
	case *hclsyntax.FunctionCallExpr:
		if t, ok := showCall(e, ctx, sh); ok {
			return t, diags
		}
	}
	sh.Hidden = append(sh.Hidden, leafTexts(v)...)
	return Redacted, diags
}

// showCall calls a transparent function with each sensitive argument
// replaced by its shown text. ok is false when that is not possible (a
// sensitive number where format wants %d): the call then shows whole.
func showCall(e *hclsyntax.FunctionCallExpr, ctx *hcl.EvalContext, sh *Shown) (string, bool) {
	f, found := ctx.Functions[e.Name]
	if !transparent[e.Name] || !found || e.ExpandFinal {
		return "", false
	}
	var args []cty.Value
	var hidden []string
	for _, a := range e.Args {
		v, ds := a.Value(ctx)
		if ds.HasErrors() {
			return "", false
		}
		if IsSensitive(v) {
			if !v.Type().IsPrimitiveType() {
				return "", false
			}
			var part Shown
			t, ds := show(a, ctx, &part)
			if ds.HasErrors() {
				return "", false
			}
			hidden = append(hidden, part.Hidden...)
			v = cty.StringVal(t)
		}
		args = append(args, v)
	}
	out, err := f.Call(args)
	if err != nil || IsSensitive(out) || out.IsNull() || !out.IsKnown() || out.Type() != cty.String {
		return "", false
	}
	sh.Hidden = append(sh.Hidden, hidden...)
	return out.AsString(), true
}

// valueString is a value's text: a string as it is, a number or a bool as
// written, anything else as HCL; unknown as (known at run time).
func valueString(v cty.Value) string {
	v, _ = v.UnmarkDeep()
	if v.IsKnown() && !v.IsNull() && v.Type().IsPrimitiveType() {
		if s, err := convert.Convert(v, cty.String); err == nil {
			return s.AsString()
		}
	}
	return showValue(v)
}

// leafTexts lists the text of every primitive value inside v.
func leafTexts(v cty.Value) []string {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	if v.Type().IsPrimitiveType() {
		return []string{valueString(v)}
	}
	var out []string
	if v.CanIterateElements() {
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, leafTexts(e)...)
		}
	}
	return out
}

// Secrets lists the text of every sensitive value of the scope: each
// sensitive variable's (every element of a collection) and each local's
// made from one.
func (s *Scope) Secrets() []string {
	var out []string
	for _, m := range []map[string]cty.Value{s.Vars, s.Locals} {
		for _, v := range m {
			if IsSensitive(v) {
				out = append(out, sensitiveLeaves(v)...)
			}
		}
	}
	return out
}

// sensitiveLeaves lists the texts of the sensitive parts of v: all of it
// when v itself is marked, else the marked elements inside it.
func sensitiveLeaves(v cty.Value) []string {
	if v.HasMark(Sensitive) {
		return leafTexts(v)
	}
	v, _ = v.Unmark()
	if v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if IsSensitive(e) {
			out = append(out, sensitiveLeaves(e)...)
		}
	}
	return out
}

// maskSource returns src with each span [start, end) (byte offsets, not
// overlapping, in order) replaced by (sensitive) on the span's first line
// and by nothing on the lines after, so that the lines keep their
// numbers; and a function that moves a position of src to the same place
// in the result: one inside a span to the start of its (sensitive), or,
// for the end of a range, to its end.
func maskSource(src []byte, spans [][2]int) ([]byte, func(p hcl.Pos, end bool) hcl.Pos) {
	type seg struct{ old, new int } // a span's start and end, before and after
	var out []byte
	var starts, ends []seg
	done := 0
	for _, sp := range spans {
		out = append(out, src[done:sp[0]]...)
		starts = append(starts, seg{sp[0], len(out)})
		out = append(out, Redacted...)
		// The newlines inside the span stay, so lines keep their numbers.
		for _, c := range src[sp[0]:sp[1]] {
			if c == '\n' {
				out = append(out, '\n')
			}
		}
		ends = append(ends, seg{sp[1], len(out)})
		done = sp[1]
	}
	out = append(out, src[done:]...)
	move := func(p hcl.Pos, end bool) hcl.Pos {
		b := p.Byte + (len(out) - len(src)) // after every span
		for i := range spans {
			if p.Byte < starts[i].old {
				b = p.Byte - starts[i].old + starts[i].new
				break
			}
			if p.Byte < ends[i].old {
				b = starts[i].new
				if end && p.Byte > starts[i].old {
					b = starts[i].new + len(Redacted)
				}
				break
			}
			b = p.Byte - ends[i].old + ends[i].new
		}
		b = min(max(b, 0), len(out))
		line, col := 1, 1
		for _, r := range string(out[:b]) {
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return hcl.Pos{Line: line, Column: col, Byte: b}
	}
	return out, move
}

// ReplaceWords replaces each occurrence in s of one of olds (tried in
// order: put the longest first) that stands as a word of its own, by
// with(its index): not where the characters around it continue it (a
// "step" inside "steps", a "1593" inside "15930").
func ReplaceWords(s string, olds []string, with func(int) string) string {
	if len(olds) == 0 || s == "" {
		return s
	}
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		for k, old := range olds {
			if old != "" && strings.HasPrefix(s[i:], old) && standsAlone(s, i, i+len(old), old) {
				b.WriteString(s[done:i])
				b.WriteString(with(k))
				i += len(old) - 1
				done = i + 1
				break
			}
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// standsAlone reports whether old, found at s[i:j], stands as a word of its
// own. A value that starts (or ends) with a non-word character needs no
// boundary on that side.
func standsAlone(s string, i, j int, old string) bool {
	if i > 0 && wordByte(s[i-1]) && wordByte(old[0]) {
		return false
	}
	if j < len(s) && wordByte(s[j]) && wordByte(old[len(old)-1]) {
		return false
	}
	return true
}

// wordByte is a letter, a digit, _, or part of a non-ASCII character.
func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// hideIn returns diags with the scope's sensitive values taken out of
// their text: go-cty's functions quote the argument they cannot use
// (cannot convert "..." to number), and a diagnostic has no marks.
func (s *Scope) hideIn(diags hcl.Diagnostics) hcl.Diagnostics {
	secrets := s.Secrets()
	if len(secrets) == 0 || len(diags) == 0 {
		return diags
	}
	var quoted []string
	for _, sec := range secrets {
		quoted = append(quoted, strconv.Quote(sec))
	}
	hide := func(t string) string {
		t = ReplaceWords(t, quoted, func(int) string { return strconv.Quote(Redacted) })
		var long []string
		for _, sec := range secrets {
			if len(sec) >= 4 {
				long = append(long, sec)
			}
		}
		return ReplaceWords(t, long, func(int) string { return Redacted })
	}
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		c.Summary, c.Detail = hide(d.Summary), hide(d.Detail)
		out[i] = &c
	}
	return out
}
