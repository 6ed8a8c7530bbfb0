package plans

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"lockstep/limits"
)

// bounded wraps a function so that it keeps to the limits: text given
// where it takes a number must be short (reading long text as a number is
// quadratic), pre (when set) checks the arguments of a function whose
// work or result grows with an argument's value before it runs, and the
// result is checked after.
//
// The wrapper takes any value and leaves conversion to f, so that the
// checks see what was given; f still reports a wrong argument as it did.
func bounded(f function.Function, pre func(args []cty.Value) error) function.Function {
	params := f.Params()
	vp := f.VarParam()
	loose := func(p function.Parameter) function.Parameter {
		return function.Parameter{Name: p.Name, Description: p.Description, Type: cty.DynamicPseudoType,
			AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}
	}
	// hcl converts a call's arguments to the parameters' types (f's Call
	// and type check only test them), so the wrapper converts for f.
	convertArgs := func(args []cty.Value) ([]cty.Value, error) {
		out := make([]cty.Value, len(args))
		for i, a := range args {
			p := vp
			if i < len(params) {
				p = &params[i]
			}
			if p == nil {
				out[i] = a
				continue
			}
			if p.Type == cty.Number {
				if err := numberText(a); err != nil {
					return nil, err
				}
			}
			c, err := convert.Convert(a, p.Type)
			if err != nil {
				return nil, function.NewArgError(i, err)
			}
			// A number too large to print quickly cannot reach a
			// function that prints it (tostring, format): in a JSON
			// plan arithmetic inside a template string is not bounded.
			if n, ok := known(c); ok && n.Type() == cty.Number {
				if err := checkNumber(n.AsBigFloat()); err != nil {
					return nil, err
				}
			}
			out[i] = c
		}
		return out, nil
	}
	spec := &function.Spec{Description: f.Description()}
	spec.Type = func(args []cty.Value) (cty.Type, error) {
		args, err := convertArgs(args)
		if err != nil {
			return cty.NilType, err
		}
		return f.ReturnTypeForValues(args)
	}
	for _, p := range params {
		spec.Params = append(spec.Params, loose(p))
	}
	if vp != nil {
		l := loose(*vp)
		spec.VarParam = &l
	}
	spec.Impl = func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		args, err := convertArgs(args)
		if err != nil {
			return cty.NilVal, err
		}
		if pre != nil {
			if err := pre(args); err != nil {
				return cty.NilVal, err
			}
		}
		res, err := f.Call(args)
		if err != nil {
			return res, err
		}
		if err := CheckValue(res); err != nil {
			return cty.NilVal, err
		}
		return res, nil
	}
	return function.New(spec)
}

// known returns v unmarked when it is known and not null.
func known(v cty.Value) (cty.Value, bool) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return v, false
	}
	v, _ = v.UnmarkDeep()
	return v, true
}

// numberText refuses text too long to be read as a number quickly.
func numberText(v cty.Value) error {
	if v, ok := known(v); ok && v.Type() == cty.String && len(v.AsString()) > MaxNumberLength {
		return limitf("a text of %d characters cannot be read as a number: a number is at most %d characters long", len(v.AsString()), MaxNumberLength)
	}
	return nil
}

// firstNumberText is pre for functions whose first argument is text read
// as a number (tonumber, parseint).
func firstNumberText(args []cty.Value) error {
	return numberText(args[0])
}

// strings of the arguments, or ok false when one is not a known string.
func knownStrings(args []cty.Value) ([]string, bool) {
	out := make([]string, len(args))
	for i, a := range args {
		a, ok := known(a)
		if !ok {
			return nil, false
		}
		s, err := convert.Convert(a, cty.String)
		if err != nil {
			return nil, false
		}
		out[i] = s.AsString()
	}
	return out, true
}

func knownNumbers(args []cty.Value) ([]float64, bool) {
	out := make([]float64, len(args))
	for i, a := range args {
		a, ok := known(a)
		if !ok {
			return nil, false
		}
		n, err := convert.Convert(a, cty.Number)
		if err != nil {
			return nil, false
		}
		out[i], _ = n.AsBigFloat().Float64()
	}
	return out, true
}

func tooMany(fn string, n float64) error {
	return limitf("%s would make %.0f elements; a value holds at most %d", fn, n, MaxElements)
}

func tooLong(fn string, n float64) error {
	return limitf("%s would make a string of %.0f bytes; a string is at most %s", fn, n, size(MaxStringBytes))
}

// rangeCount refuses a range of more elements than a value may hold,
// before it is made.
func rangeCount(args []cty.Value) error {
	n, ok := knownNumbers(args)
	if !ok {
		return nil
	}
	start, limit, step := 0.0, 0.0, 1.0
	switch len(n) {
	case 1:
		limit = n[0]
	case 2:
		start, limit = n[0], n[1]
		if limit < start {
			step = -1
		}
	default:
		start, limit, step = n[0], n[1], n[2]
	}
	if step == 0 || math.IsNaN(start) || math.IsNaN(limit) {
		return nil // range reports it
	}
	if count := math.Ceil((limit - start) / step); count > MaxRange {
		return limitf("range would make %.0f numbers; it makes at most %d", count, MaxRange)
	}
	return nil
}

// splitCount refuses a split into more pieces than a value may hold.
func splitCount(args []cty.Value) error {
	s, ok := knownStrings(args)
	if !ok {
		return nil
	}
	sep, str := s[0], s[1]
	n := strings.Count(str, sep) + 1
	if sep == "" {
		n = utf8.RuneCountInString(str)
	}
	if n > MaxElements {
		return tooMany("split", float64(n))
	}
	return nil
}

// regexCount refuses a regexall of more matches than a value may hold,
// counting at most one more than the limit.
func regexCount(args []cty.Value) error {
	s, ok := knownStrings(args)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s[0])
	if err != nil {
		return nil // regexall reports it
	}
	if n := len(re.FindAllStringIndex(s[1], MaxElements+1)); n > MaxElements {
		return tooMany("regexall", float64(n))
	}
	return nil
}

// replaceSize refuses a replace whose result would be longer than a
// string may be: replace("aaaa", "a", LONG) grows with both.
func replaceSize(args []cty.Value) error {
	s, ok := knownStrings(args)
	if !ok {
		return nil
	}
	str, substr, repl := s[0], s[1], s[2]
	var out float64
	if len(substr) > 1 && strings.HasPrefix(substr, "/") && strings.HasSuffix(substr, "/") {
		re, err := regexp.Compile(substr[1 : len(substr)-1])
		if err != nil {
			return nil // replace reports it
		}
		// Each match becomes repl with its $ references expanded, and a
		// reference is at most the match.
		matches, matched := 0, 0
		for _, m := range re.FindAllStringIndex(str, -1) {
			matches++
			matched += m[1] - m[0]
		}
		out = float64(len(str)) + float64(matches)*float64(len(repl)) + float64(strings.Count(repl, "$"))*float64(matched)
	} else {
		n := strings.Count(str, substr)
		out = float64(len(str)) + float64(n)*float64(len(repl)-len(substr))
	}
	if out > MaxStringBytes {
		return tooLong("replace", out)
	}
	return nil
}

// joinSize refuses a join longer than a string may be.
func joinSize(args []cty.Value) error {
	sep, ok := known(args[0])
	if !ok || sep.Type() != cty.String {
		return nil
	}
	total, n := 0.0, 0
	for _, l := range args[1:] {
		l, ok := known(l)
		if !ok || !l.CanIterateElements() {
			return nil
		}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.Type() == cty.String {
				total += float64(len(e.AsString()))
			}
			n++
		}
	}
	total += float64(max(n-1, 0)) * float64(len(sep.AsString()))
	if total > MaxStringBytes {
		return tooLong("join", total)
	}
	return nil
}

// indentSize refuses an indent longer than a string may be.
func indentSize(args []cty.Value) error {
	n, ok := knownNumbers(args[:1])
	s, ok2 := knownStrings(args[1:2])
	if !ok || !ok2 {
		return nil
	}
	if out := float64(len(s[0])) + n[0]*float64(strings.Count(s[0], "\n")); out > MaxStringBytes || n[0] > MaxStringBytes {
		return tooLong("indent", math.Max(out, n[0]))
	}
	return nil
}

// formatWidths refuses a format verb whose width or precision would pad
// a value without bound: format("%999999999d", 1).
func formatWidths(args []cty.Value) error {
	f, ok := known(args[0])
	if !ok || f.Type() != cty.String {
		return nil
	}
	s := f.AsString()
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		i++
		for i < len(s) && strings.IndexByte("+-# 0", s[i]) >= 0 {
			i++
		}
		if i < len(s) && s[i] == '[' {
			for i < len(s) && s[i] != ']' {
				i++
			}
			i++
		}
		for _, part := range []bool{true, false} {
			if !part {
				if i >= len(s) || s[i] != '.' {
					break
				}
				i++
			}
			n := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				n = min(n*10+int(s[i]-'0'), MaxFormatWidth+1)
				i++
			}
			if n > MaxFormatWidth {
				return limitf("a format verb pads to %d or more characters; a width or precision is at most %d", MaxFormatWidth+1, MaxFormatWidth)
			}
		}
		i-- // the loop steps onto the verb
	}
	return nil
}

// jsonText refuses JSON text that would be slow to read: numbers too long
// or nesting too deep (the reader recurses once per level).
func jsonText(args []cty.Value) error {
	s, ok := knownStrings(args[:1])
	if !ok {
		return nil
	}
	return limits.CheckJSON([]byte(s[0]))
}

// boundOperators makes the arithmetic of a parsed native-syntax tree keep
// to the number limit: each arithmetic operation's result is checked, as
// a function's is (1e300 * 1e300 * ... would otherwise grow without
// bound inside one expression). JSON plans' templates are parsed anew each
// time hcl evaluates them, so only their literals, values and function
// results are bounded.
func boundOperators(node hclsyntax.Node) {
	ops := map[*hclsyntax.Operation]*hclsyntax.Operation{}
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.BinaryOpExpr:
			e.Op = boundOperation(ops, e.Op)
		case *hclsyntax.UnaryOpExpr:
			e.Op = boundOperation(ops, e.Op)
		}
		return nil
	})
}

// boundOperation is op with its result checked, when it is arithmetic;
// ops holds the operations bound so far, so that each has one wrapper and
// a tree bound twice keeps it.
func boundOperation(ops map[*hclsyntax.Operation]*hclsyntax.Operation, op *hclsyntax.Operation) *hclsyntax.Operation {
	if op == nil || op.Type != cty.Number {
		return op
	}
	if b, ok := ops[op]; ok {
		return b
	}
	b := *op
	b.Impl = checkedResult(op.Impl)
	ops[op] = &b
	ops[&b] = &b
	return &b
}

// checkedResult is f with its result checked against the limits; its
// parameters are f's, so hcl converts operands as before.
func checkedResult(f function.Function) function.Function {
	spec := &function.Spec{Description: f.Description(), Params: f.Params(), VarParam: f.VarParam(), Type: f.ReturnTypeForValues}
	spec.Impl = func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		res, err := f.Call(args)
		if err != nil {
			return res, err
		}
		if err := CheckValue(res); err != nil {
			return cty.NilVal, err
		}
		return res, nil
	}
	return function.New(spec)
}
