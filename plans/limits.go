package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/limits"
)

// The limits a plan keeps to, declared in package limits (where each is
// documented) so that the probes and loads apply them too.
const (
	MaxPlanBytes     = limits.MaxPlanBytes
	MaxVarFileBytes  = limits.MaxVarFileBytes
	MaxVarValueBytes = limits.MaxVarValueBytes
	MaxNesting       = limits.MaxNesting
	MaxNumberLength  = limits.MaxNumberLength
	MaxStringBytes   = limits.MaxStringBytes
	MaxLocalsBytes   = limits.MaxLocalsBytes
	MaxElements      = limits.MaxElements
	MaxFormatWidth   = limits.MaxFormatWidth
	MaxRange         = limits.MaxRange
)

// A number is held to the range of a 64-bit float: beyond it printing
// the number costs time in proportion to its exponent.
const (
	maxNumberText = "1.8e308"
	minNumberText = "4.9e-324"
)

// LimitError is a value, an input or an evaluation beyond one of the
// limits (limits.Error).
type LimitError = limits.Error

func limitf(format string, args ...any) *LimitError { return limits.Errorf(format, args...) }

// ExceedsLimit returns the limit error among diags, if any: one reported
// directly, or a function's or an operator's error that is one.
func ExceedsLimit(diags hcl.Diagnostics) error {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		switch x := d.Extra.(type) {
		case *LimitError:
			return x
		case hclsyntax.FunctionCallDiagExtra:
			var le *LimitError
			if errors.As(x.FunctionCallError(), &le) {
				return le
			}
		}
		// hcl reports an operator's error with its text only, no Extra;
		// the only error a bounded operator adds is a number's range.
		switch d.Expression.(type) {
		case *hclsyntax.BinaryOpExpr, *hclsyntax.UnaryOpExpr:
			if strings.Contains(d.Detail, numberRangeText) {
				return limits.Errorf("%s", strings.TrimSuffix(strings.TrimPrefix(d.Detail, "Error during operation: "), "."))
			}
		}
	}
	return nil
}

// numberRangeText is in every error about a number's range.
const numberRangeText = " is out of range: "

// CheckValue checks a value made outside the plan's expressions (an
// observed probe output, a command's output read as JSON) against the
// limits on numbers, strings and elements. Unknown and null parts pass.
func CheckValue(v cty.Value) error {
	n := 0
	return checkValue(v, &n)
}

func checkValue(v cty.Value, elems *int) error {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return nil
	}
	v, _ = v.Unmark()
	ty := v.Type()
	switch {
	case ty == cty.Number:
		if err := checkNumber(v.AsBigFloat()); err != nil {
			return err
		}
	case ty == cty.String:
		if n := len(v.AsString()); n > MaxStringBytes {
			return limitf("a string of %s is longer than the limit of %s", size(n), size(MaxStringBytes))
		}
		return nil
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		*elems += v.LengthInt()
		if *elems > MaxElements {
			return limitf("a value holds more than %d elements, the limit", MaxElements)
		}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if err := checkValue(e, elems); err != nil {
				return err
			}
		}
	}
	return nil
}

// sizeOf is what MaxLocalsBytes counts of a value.
func sizeOf(v cty.Value) int {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return 0
	}
	v, _ = v.Unmark()
	ty := v.Type()
	switch {
	case ty == cty.String:
		return len(v.AsString())
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		n := 0
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n += 16 + sizeOf(e)
		}
		return n
	}
	return 16
}

// localsBudget counts what the locals hold together against MaxLocalsBytes.
type localsBudget int

// add counts v, or returns the limit error once the locals hold too much.
func (b *localsBudget) add(v cty.Value) error {
	if err := CheckValue(v); err != nil {
		return err
	}
	*b += localsBudget(sizeOf(v))
	if *b > MaxLocalsBytes {
		return limitf("the locals together hold more than %s, the limit", size(MaxLocalsBytes))
	}
	return nil
}

// checkNumber holds a number to the range of a 64-bit float. It never
// prints the number: that is what would take the time.
func checkNumber(f *big.Float) *LimitError {
	if f.IsInf() || f.Sign() == 0 {
		return nil
	}
	f64, _ := f.Float64()
	switch {
	case math.IsInf(f64, 0):
		return limitf("a number of about 10^%d%snumbers go up to %s in magnitude, as a 64-bit float does", decimalExponent(f), numberRangeText, maxNumberText)
	case f64 == 0:
		return limitf("a number of about 10^%d%sa number other than 0 is at least %s in magnitude, as a 64-bit float is", decimalExponent(f), numberRangeText, minNumberText)
	}
	return nil
}

func decimalExponent(f *big.Float) int64 {
	exp := f.MantExp(nil)
	return int64(math.Floor(float64(exp) * math.Log10(2)))
}

func size(n int) string { return limits.Size(n) }

// limitDiag reports a limit at rng.
func limitDiag(summary string, err *LimitError, fix string, rng hcl.Range) *hcl.Diagnostic {
	detail := err.Error()
	if detail != "" {
		detail = strings.ToUpper(detail[:1]) + detail[1:] + "."
	}
	if fix != "" {
		detail += " " + fix
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr(), Extra: err}
}

// CheckSource checks a plan's or a var file's source against the limits
// that must hold before hcl reads it: its size, how deep it nests, and
// how long and how large its numbers are. fmt runs it too: hcl's parser
// would overflow the stack on deep nesting. max is the size limit for
// this kind of file.
func CheckSource(filename string, src []byte, max int) hcl.Diagnostics {
	_, diags := checkSource(filename, src, max)
	return diags
}

// checkSource is CheckSource that also returns where a native-syntax
// file within the limits may be cut for its parse (nativeScan), nil when
// it is not to be cut.
func checkSource(filename string, src []byte, max int) ([]int, hcl.Diagnostics) {
	if len(src) > max {
		return nil, hcl.Diagnostics{limitDiag("File too large",
			limitf("this file is larger than %s, the limit", size(max)),
			"Split it, or move large data into files the plan's commands read.",
			hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos})}
	}
	if strings.HasSuffix(filename, ".json") {
		return nil, checkJSONSource(filename, src)
	}
	if deep, long, cuts, ok := nativeScan(src, cutEvery); ok && deep <= MaxNesting && long <= MaxNumberLength {
		return cuts, nil
	}
	return nil, lexedLimits(filename, src, hcl.InitialPos, false)
}

// checkTokens walks the native-syntax tokens of src (a file, or a
// template when template is true) for nesting and number literals. A file
// whose bounds (nativeBounds) are within the limits passes unlexed.
func checkTokens(filename string, src []byte, start hcl.Pos, template bool) hcl.Diagnostics {
	if !template {
		if deep, long, ok := nativeBounds(src); ok && deep <= MaxNesting && long <= MaxNumberLength {
			return nil
		}
	}
	return lexedLimits(filename, src, start, template)
}

// lexedLimits is checkTokens on hcl's tokens of src, exact where the
// bounds are not.
func lexedLimits(filename string, src []byte, start hcl.Pos, template bool) hcl.Diagnostics {
	var tokens hclsyntax.Tokens
	if template {
		tokens, _ = hclsyntax.LexTemplate(src, filename, start)
	} else {
		tokens, _ = hclsyntax.LexConfig(src, filename, start)
	}
	depth, unary := 0, 0
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenTemplateInterp,
			hclsyntax.TokenTemplateControl, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenTemplateSeqEnd,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			depth--
		case hclsyntax.TokenNumberLit:
			if len(t.Bytes) > MaxNumberLength {
				return hcl.Diagnostics{limitDiag("Number too long",
					limitf("this number is %d characters long; the limit is %d", len(t.Bytes), MaxNumberLength),
					"Write it with an exponent, e.g. 1.5e9.", t.Range)}
			}
		}
		if t.Type == hclsyntax.TokenBang || t.Type == hclsyntax.TokenMinus {
			unary++
		} else {
			unary = 0
		}
		if depth+unary > MaxNesting {
			return hcl.Diagnostics{nestingDiag(t.Range)}
		}
	}
	return nil
}

func nestingDiag(rng hcl.Range) *hcl.Diagnostic {
	return limitDiag("Too deeply nested",
		limitf("this nests more than %d levels deep, the limit", MaxNesting),
		"Compute the inner parts as locals and refer to them.", rng)
}

// checkJSONSource checks a JSON plan or var file: nesting, number
// lengths, and each string that holds a template as a native template
// (hcl reads those when it evaluates them). encoding/json's decoder
// walks the file without recursing.
func checkJSONSource(filename string, src []byte) hcl.Diagnostics {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	depth := 0
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			// io.EOF, or a syntax error that hcl's parser reports better.
			return nil
		}
		rng := offsetRange(filename, src, int(before), int(dec.InputOffset()))
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
			if depth > MaxNesting {
				return hcl.Diagnostics{nestingDiag(rng)}
			}
		case json.Number:
			if len(t) > MaxNumberLength {
				return hcl.Diagnostics{limitDiag("Number too long",
					limitf("this number is %d characters long; the limit is %d", len(t), MaxNumberLength),
					"Write it with an exponent, e.g. 1.5e9.", rng)}
			}
			if f, _, err := big.ParseFloat(string(t), 10, 512, big.ToNearestEven); err == nil {
				if err := checkNumber(f); err != nil {
					return hcl.Diagnostics{numberDiag(err, rng)}
				}
			}
		case string:
			if !strings.Contains(t, "${") && !strings.Contains(t, "%{") {
				continue
			}
			if diags := checkTokens(filename, []byte(t), rng.Start, true); diags.HasErrors() {
				return diags
			}
			expr, diags := hclsyntax.ParseTemplate([]byte(t), filename, rng.Start)
			if diags.HasErrors() {
				continue // hcl reports it when it reads the string
			}
			if diags := checkTree(expr); diags.HasErrors() {
				return diags
			}
		}
	}
}

// offsetRange is the range of src[from:to] (a JSON token).
func offsetRange(filename string, src []byte, from, to int) hcl.Range {
	pos := func(off int) hcl.Pos {
		off = min(max(off, 0), len(src))
		line := 1 + bytes.Count(src[:off], []byte("\n"))
		col := off - bytes.LastIndexByte(src[:off], '\n')
		return hcl.Pos{Line: line, Column: col, Byte: off}
	}
	// The token starts after the separators the decoder skipped.
	for from < to && from < len(src) && strings.IndexByte(" \t\r\n,:", src[from]) >= 0 {
		from++
	}
	return hcl.Range{Filename: filename, Start: pos(from), End: pos(to)}
}

// localLimitDiag reports a local whose value is beyond a limit: doubling
// a string or a list through a chain of locals would otherwise grow
// without bound.
func localLimitDiag(l *Local, err error) *hcl.Diagnostic {
	return limitDiag("Value beyond a limit", limitf("the value of local.%s is beyond a limit: %s", l.Name, err), "Compute a smaller value.", l.Expr.Range())
}

func numberDiag(err *LimitError, rng hcl.Range) *hcl.Diagnostic {
	return limitDiag("Number out of range", err, "", rng)
}

// errTooDeep stops checkTree's walk at the first node too deep, so the
// walk itself recurses no further than the limit.
var errTooDeep = errors.New("too deep")

// checkTree checks a parsed native-syntax node: how deep its expressions
// nest (a long chain such as 1+1+...+1 parses without recursing, but
// evaluating it recurses once per operator) and that its number literals
// are in range.
func checkTree(node hclsyntax.Node) hcl.Diagnostics {
	return walkTree(node, nil)
}

// checkAndBound is checkTree and boundOperators in one walk, for a tree
// that is discarded when the check fails. The same walk scans each
// attribute's expression for what it reads and calls (exprScan), in the
// order of the walk, for the analysis of the plan. src is the text node
// was parsed from.
func checkAndBound(node hclsyntax.Node, src []byte) (*fileScan, hcl.Diagnostics) {
	w := newFileWalk(src)
	w.walkPart(node)
	return w.scanned()
}

// newFileWalk starts checkAndBound's walk of the tree parsed from src,
// fed in parts in the file's order (walkPart): parseCut hands it each
// piece's body as hcl's parser makes it, while the piece is still in the
// processor's cache (walked after the whole parse, the tree is read back
// from memory).
func newFileWalk(src []byte) *treeChecker {
	attrs := equalsSigns(src)
	f := &fileScan{roots: make([]rootScan, 0, attrs), refs: make(Refs, 0, attrs), names: map[string]*refNames{}, src: src}
	return &treeChecker{ops: map[*hclsyntax.Operation]*hclsyntax.Operation{}, scan: f, src: src}
}

// walkPart walks node, the next part of the tree; after a node too deep
// it walks nothing more, as the walk of the whole stops there.
func (w *treeChecker) walkPart(node hclsyntax.Node) {
	if !w.tooDeep {
		w.run(node)
	}
}

// scanned is checkAndBound's result, of the parts walked.
func (w *treeChecker) scanned() (*fileScan, hcl.Diagnostics) {
	if w.tooDeep {
		return w.scan, hcl.Diagnostics{nestingDiag(w.deep)}
	}
	return w.scan, w.diags
}

// equalsSigns counts the equals signs of src that are not part of an
// operator (==, !=, <=, >=, =>): every attribute has one, so the count is
// at least the attributes', and a plan's references are about as many.
// (Counting every sign sized for half as many again in a long plan: its
// conditions compare.)
func equalsSigns(src []byte) int {
	n := 0
	for i := bytes.IndexByte(src, '='); i >= 0; {
		lone := (i == 0 || !strings.ContainsRune("=!<>", rune(src[i-1]))) && (i+1 == len(src) || src[i+1] != '=' && src[i+1] != '>')
		if lone {
			n++
		}
		j := bytes.IndexByte(src[i+1:], '=')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return n
}

// walkTree checks node, and binds its arithmetic as it goes when ops (the
// operations bound so far) is not nil.
func walkTree(node hclsyntax.Node, ops map[*hclsyntax.Operation]*hclsyntax.Operation) hcl.Diagnostics {
	return (&treeChecker{ops: ops}).run(node)
}

func (w *treeChecker) run(node hclsyntax.Node) (diags hcl.Diagnostics) {
	defer func() {
		if r := recover(); r != nil {
			if r != errTooDeep {
				panic(r)
			}
			w.tooDeep = true
			diags = hcl.Diagnostics{nestingDiag(w.deep)}
		}
	}()
	walk(node, w)
	return w.diags
}

type treeChecker struct {
	depth   int
	deep    hcl.Range
	tooDeep bool // the walk stopped at deep
	diags   hcl.Diagnostics
	ops     map[*hclsyntax.Operation]*hclsyntax.Operation

	// scan, when not nil, gathers what each expression at depth 0 (an
	// attribute's) reads and calls.
	scan *fileScan
	at   rootScan // the expression being walked

	src []byte // the text parsed, when known (plainNumber)
}

func (w *treeChecker) Enter(n hclsyntax.Node) hcl.Diagnostics {
	if w.scan != nil {
		if w.depth == 0 {
			w.at.refs[0], w.at.calls[0] = int32(len(w.scan.refs)), int32(len(w.scan.calls))
			if e, ok := n.(hclsyntax.Expression); ok {
				rng := e.Range()
				w.at.text = [2]int32{int32(rng.Start.Byte), int32(rng.End.Byte)}
			}
		}
		w.scan.enter(n)
	}
	e, ok := n.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	w.depth++
	if w.depth > MaxNesting {
		w.deep = e.StartRange()
		panic(errTooDeep)
	}
	switch e := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		if e.Val.Type() == cty.Number && e.Val.IsKnown() && !e.Val.IsNull() && !w.plainNumber(e.SrcRange) {
			if err := checkNumber(e.Val.AsBigFloat()); err != nil {
				w.diags = append(w.diags, numberDiag(err, e.SrcRange))
			}
		}
	case *hclsyntax.BinaryOpExpr:
		if w.ops != nil {
			e.Op = boundOperation(w.ops, e.Op)
		}
	case *hclsyntax.UnaryOpExpr:
		if w.ops != nil {
			e.Op = boundOperation(w.ops, e.Op)
		}
	}
	return nil
}

// plainNumber tells whether the number literal at rng is written with
// digits and a point only, in at most maxPlainNumber characters: such a
// number is within a 64-bit float's range (checkNumber) without being
// read, as a long plan has thousands of small numbers.
func (w *treeChecker) plainNumber(rng hcl.Range) bool {
	from, to := rng.Start.Byte, rng.End.Byte
	if from < 0 || to > len(w.src) || from >= to || to-from > maxPlainNumber {
		return false
	}
	for _, c := range w.src[from:to] {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// maxPlainNumber is the longest plainNumber: at most 300 digits are below
// 10^300 and, other than 0, at least 10^-299, both within a 64-bit
// float's range (about 1.8e308 down to 4.9e-324).
const maxPlainNumber = 300

func (w *treeChecker) Exit(n hclsyntax.Node) hcl.Diagnostics {
	if w.scan != nil {
		w.scan.exit(n)
	}
	e, ok := n.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	w.depth--
	if w.depth == 0 && w.scan != nil {
		w.at.expr = e
		w.scan.endRoot(int(w.at.refs[0]))
		w.at.refs[1], w.at.calls[1] = int32(len(w.scan.refs)), int32(len(w.scan.calls))
		w.scan.roots = append(w.scan.roots, w.at)
	}
	return nil
}
