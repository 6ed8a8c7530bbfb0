package plans

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// tokenBounds measures with hcl's own tokens what nativeBounds bounds:
// the deepest nesting with unary runs, as checkTokens counts it, and the
// longest number literal.
func tokenBounds(src []byte) (deepest, longest int) {
	tokens, _ := hclsyntax.LexConfig(src, "t.hcl", hcl.InitialPos)
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
			longest = max(longest, len(t.Bytes))
		}
		if t.Type == hclsyntax.TokenBang || t.Type == hclsyntax.TokenMinus {
			unary++
		} else {
			unary = 0
		}
		deepest = max(deepest, depth+unary)
	}
	return deepest, longest
}

// assertBounds fails unless nativeBounds is at least what hcl's tokens
// measure: below, CheckSource would pass a file that nests too deeply.
func assertBounds(t *testing.T, src []byte) {
	t.Helper()
	deep, long, ok := nativeBounds(src)
	if !ok {
		return // CheckSource lexes it
	}
	wantDeep, wantLong := tokenBounds(src)
	if deep < wantDeep || long < wantLong {
		t.Fatalf("nativeBounds = (%d, %d), below hcl's tokens' (%d, %d) for\n%q", deep, long, wantDeep, wantLong, src)
	}
}

var prescanCases = []string{
	"a = 1\n",
	"a = -1\nb = !!true\nc = - - -1\n",
	"a = \"${x}\"\nb = \"$${x}\"\nc = \"$$${x}\"\nd = \"%{if x}y%{endif}\"\ne = \"%%{x}\"\n",
	"a = \"\\\"${x}\\\"\"\nb = \"\\${((((x))))}\"\n",
	"a = \"${ {a = {b = 1}} }\"\nb = \"${x ~}\"\nc = \"${~ x}\"\n",
	"a = <<EOT\n((((\nEOT\nb = ((1))\n",
	"a = <<-EOT\n  ${x}\n  EOT\nb = [[[1]]]\n",
	"a = <<EOT\r\n${x}\r\nEOT\r\nb = [[[1]]]\r\n",
	"a = <<EOT\nEOT is not the end\n EOT \n(((\n",
	"a = <<EOT\n$EOT\nEOT\n((((\n",
	"a = <<EOT\n\xffEOT\n((((\n",
	"a = <<EOT\n${<<IN\nx\nIN\n}EOT\nEOT\n[[[\n",
	"a = <<EOT x\nEOT\n((((\n",
	"a = <<<EOT\n(((\nEOT\n",
	"a = <<--EOT\n(((\nEOT\n",
	"# \"(((\n// ((( \"\n/* \" */ b = (((1)))\n",
	"/* unclosed ((((\n",
	"a = \"unclosed ((((\n(((((\n",
	"a = 1e-10 + 0.5e+3 + 123456789\n",
	"a = x-y-z\n",
	"a = \"${\"${\"${1}\"}\"}\"\n",
	"}}}}((((\n",
	"a = \"}}}}\"\n((((\n",
	"a = \"${}}}\"\n((((\n",
	"\xef\xbb\xbfa = ((1))\n",
	"a = \"\xc3\"\nb = ((1))\n",
	"a = <<EOT\n\xc3\xa9EOT\nEOT\n",
	"a = <<EOT\n\u00a0EOT\u00a0\n((((\n",
	"a = \"\\\n((((\n\"\n",
	"a = <<EOT\n$\nEOT\n((((\n",
	"a = <<EOT\n$$\nEOT\n((((\n",
	"a = <<EOT\n$a\n\nEOT\n((((\n",
	"a = <<EOT\n%\n\nEOT\n((((\n",
	"a = <<EOT\nx\rEOT\n((((\n",
	"a = <<EOT\nEOT\r\r\n((((\n",
}

// TestNativeBounds: nativeBounds follows hcl's scanner through strings,
// escapes, heredocs, templates and comments on the cases where a byte
// means something else than it looks, the example plans and the fuzz
// corpora.
func TestNativeBounds(t *testing.T) {
	for _, src := range prescanCases {
		assertBounds(t, []byte(src))
	}
	for _, src := range prescanSeeds(t) {
		assertBounds(t, src)
	}
	// Exact on the example plans, not an over-count, so that a plan of
	// ordinary depth is not lexed twice.
	examples, _ := filepath.Glob("../examples/*.hcl")
	for _, path := range examples {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		deep, long, ok := nativeBounds(src)
		wantDeep, wantLong := tokenBounds(src)
		if !ok || deep != wantDeep || long != wantLong {
			t.Errorf("%s: nativeBounds = (%d, %d, %v), hcl's tokens (%d, %d)", path, deep, long, ok, wantDeep, wantLong)
		}
	}
}

// FuzzNativeBounds checks nativeBounds against hcl's scanner on
// arbitrary bytes.
func FuzzNativeBounds(f *testing.F) {
	addScanSeeds(f, prescanCases)
	f.Fuzz(func(t *testing.T, src []byte) {
		assertBounds(t, src)
		// The same folded into ASCII, where nativeBounds never gives up.
		ascii := make([]byte, len(src))
		for i, c := range src {
			ascii[i] = c & 0x7f
		}
		assertBounds(t, ascii)
	})
}

// addScanSeeds adds cases and prescanSeeds to f's corpus.
func addScanSeeds(f *testing.F, cases []string) {
	for _, src := range cases {
		f.Add([]byte(src))
	}
	for _, src := range prescanSeeds(f) {
		f.Add(src)
	}
}

// prescanSeeds reads the example plans, the test plans and the fuzz
// corpora of FuzzParse and FuzzFormat.
func prescanSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, pat := range []string{"../examples/*.hcl", "../examples/*/*.hcl", "testdata/*/*.hcl", "../cmd/lockstep/testdata/script/*.txtar"} {
		m, _ := filepath.Glob(pat)
		for _, path := range m {
			if src, err := os.ReadFile(path); err == nil {
				out = append(out, src)
			}
		}
	}
	for _, dir := range []string{"FuzzParse", "FuzzFormat"} {
		m, _ := filepath.Glob(filepath.Join("testdata/fuzz", dir, "*"))
		for _, path := range m {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, rest, _ := strings.Cut(string(data), "\n")
			rest = strings.TrimSpace(rest)
			if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(rest, "[]byte("), ")")); err == nil {
				out = append(out, []byte(s))
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("only %d seeds", len(out))
	}
	return out
}

// BenchmarkNativeBounds reads the example plans as CheckSource does.
func BenchmarkNativeBounds(b *testing.B) {
	var src []byte
	examples, _ := filepath.Glob("../examples/*.hcl")
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		src = append(append(src, data...), '\n')
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		nativeBounds(src)
	}
}

// walkReference is walkTree through hclsyntax.Walk, as it was written
// first: the walk that treeChecker.node must agree with.
func walkReference(node hclsyntax.Node) (diags hcl.Diagnostics) {
	w := &treeChecker{}
	defer func() {
		if r := recover(); r != nil {
			if r != errTooDeep {
				panic(r)
			}
			diags = hcl.Diagnostics{nestingDiag(w.deep)}
		}
	}()
	hclsyntax.Walk(node, w)
	return w.diags
}

// summaries lists diags' summaries and lines, in order. Which node too
// deep is reported depends on the order of a body's attributes, a map's:
// its line is left out.
func summaries(diags hcl.Diagnostics) string {
	var out []string
	for _, d := range diags {
		s := d.Summary
		if d.Subject != nil && d.Summary != "Too deeply nested" {
			s += " at line " + strconv.Itoa(d.Subject.Start.Line)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// TestWalkTree: the tree check walks every kind of expression as
// hclsyntax.Walk does, each nesting construct just within and just beyond
// the limit, and the seed plans.
func TestWalkTree(t *testing.T) {
	nest := func(open, inner, close string, n int) string {
		return "x = " + strings.Repeat(open, n) + inner + strings.Repeat(close, n) + "\n"
	}
	var srcs []string
	for n := MaxNesting - 2; n <= MaxNesting+2; n++ {
		srcs = append(srcs,
			"x = 1"+strings.Repeat(" + 1", n)+"\n",
			"x = a"+strings.Repeat("[b]", n)+"\n",
			"x = a"+strings.Repeat(" ? b : a", n)+"\n",
			"x = a"+strings.Repeat("[*].b", n/3)+"\n",
			"x = f(a)"+strings.Repeat(".b[c]", n)+"\n",
			nest("[", "1", "]", n/2),
			nest("{a = ", "1", "}", n/2),
			nest("{(a) = ", "1", "}", n/2),
			nest("[for x in y : ", "x", "]", n/2),
			nest("{for k, v in y : k => ", "v if v", "}", n/2),
			nest(`"${`, "1", `}"`, n/3),
			nest(`"%{if a}`, "1", `%{endif}"`, n/3),
			nest("(", "1e400", ")", n),
		)
	}
	for _, src := range srcs {
		checkWalk(t, []byte(src))
	}
	for _, src := range prescanSeeds(t) {
		checkWalk(t, src)
	}
}

func checkWalk(t *testing.T, src []byte) {
	t.Helper()
	file, diags := hclsyntax.ParseConfig(src, "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return
	}
	body := file.Body.(*hclsyntax.Body)
	if got, want := summaries(checkTree(body)), summaries(walkReference(body)); got != want {
		t.Errorf("checkTree = %q, hclsyntax.Walk %q for\n%s", got, want, src)
	}
}

// TestExprScan: one scan of an expression finds the traversals
// hclsyntax.Variables lists, in its order, and the calls hclsyntax's own
// walk visits, for every attribute of the seed plans and of expressions
// that scope names (for) or hide them (object keys).
func TestExprScan(t *testing.T) {
	srcs := prescanSeeds(t)
	srcs = append(srcs,
		[]byte("x = [for k, v in var.m : upper(v) if k != local.skip && v != k]\n"),
		[]byte("x = {for x in var.l : x => [for y in x : y + var.n]}\n"),
		[]byte("x = { a = var.a, (local.k) = 1, \"s\" = f(var.b) }\n"),
		[]byte("x = var.l[*].name\ny = g(var.l)[0].x\nz = \"${var.a}%{for i in var.l}${i}%{endfor}\"\n"),
	)
	var s exprScan
	for _, src := range srcs {
		file, diags := hclsyntax.ParseConfig(src, "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			continue
		}
		hclsyntax.VisitAll(file.Body.(*hclsyntax.Body), func(n hclsyntax.Node) hcl.Diagnostics {
			a, ok := n.(*hclsyntax.Attribute)
			if !ok {
				return nil
			}
			var calls []string
			hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
				if c, ok := n.(*hclsyntax.FunctionCallExpr); ok {
					calls = append(calls, c.Name+"@"+c.NameRange.String())
				}
				return nil
			})
			got := s.scan(a.Expr)
			var gotCalls []string
			for _, c := range got.calls {
				gotCalls = append(gotCalls, c.Name+"@"+c.NameRange.String())
			}
			if g, w := traversalsText(got.vars), traversalsText(hclsyntax.Variables(a.Expr)); g != w {
				t.Errorf("%s: scan found %s, hclsyntax.Variables %s", a.SrcRange, g, w)
			}
			if g, w := strings.Join(gotCalls, " "), strings.Join(calls, " "); g != w {
				t.Errorf("%s: scan found calls %s, hclsyntax.VisitAll %s", a.SrcRange, g, w)
			}
			return nil
		})
	}
}

// TestRootScans: the limits' walk of a file (checkAndBound) records, for
// every attribute's expression and only those, what a scan of it alone
// finds, so the analysis can read that instead; and a plan analysed from
// those records reads what one analysed by scanning each expression does.
func TestRootScans(t *testing.T) {
	srcs := prescanSeeds(t)
	srcs = append(srcs,
		[]byte("x = [for k, v in var.m : upper(v) if k != local.skip && v != k]\n"),
		[]byte("x = {for x in var.l : x => [for y in x : y + var.n]}\nb {\n  y = f(var.a, [for z in var.l : z])\n}\n"),
	)
	var s exprScan
	pieces := 0
	for _, src := range srcs {
		for _, cut := range []bool{false, true} {
			file, diags := hclsyntax.ParseConfig(src, "t.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				continue
			}
			var scanned *fileScan
			if cut {
				// Walked a piece at a time as parseCut parses them, cut
				// wherever the file may be.
				_, _, cuts, _ := nativeScan(src, 1)
				walk := newFileWalk(src)
				if file = parseCut("t.hcl", src, cuts, walk.walkPart); file == nil {
					continue
				}
				pieces++
				scanned, diags = walk.scanned()
			} else {
				scanned, diags = checkAndBound(file.Body.(*hclsyntax.Body), src)
			}
			if diags.HasErrors() {
				continue
			}
			var attrs []*hclsyntax.Attribute
			hclsyntax.VisitAll(file.Body.(*hclsyntax.Body), func(n hclsyntax.Node) hcl.Diagnostics {
				if a, ok := n.(*hclsyntax.Attribute); ok {
					attrs = append(attrs, a)
				}
				return nil
			})
			byExpr := map[hclsyntax.Expression]rootScan{}
			for _, r := range scanned.roots {
				byExpr[r.expr] = r
			}
			if n := len(scanned.roots); len(byExpr) != n || n != len(attrs) {
				t.Fatalf("%s: %d roots recorded (%d distinct) for %d attributes", src, n, len(byExpr), len(attrs))
			}
			if n := equalsSigns(src); n < len(attrs) {
				t.Errorf("%s: %d equals signs counted for %d attributes", src, n, len(attrs))
			}
			for _, a := range attrs {
				root, ok := byExpr[a.Expr]
				if !ok {
					t.Fatalf("%s: no root recorded for %s", src, a.SrcRange)
				}
				r := struct {
					refs  Refs
					calls []*hclsyntax.FunctionCallExpr
				}{scanned.rootRefs(root), scanned.rootCalls(root)}
				if got, want := scanned.rootText(root), src[a.Expr.Range().Start.Byte:a.Expr.Range().End.Byte]; !bytes.Equal(got, want) {
					t.Errorf("%s: the walk recorded the text %q, the expression's is %q", a.SrcRange, got, want)
				}
				want := s.scan(a.Expr)
				// The old way: the scan's traversals, each made a reference
				// alone, the first of each text kept.
				var wantRefs Refs
				for _, tr := range want.vars {
					wantRefs = wantRefs.add(refOf(tr))
				}
				if !sameRefs(r.refs, wantRefs) {
					t.Errorf("%s: the walk made %s, a scan finds %s", a.SrcRange, refsText(r.refs), refsText(wantRefs))
				}
				if g, w := len(r.calls), len(want.calls); g != w {
					t.Errorf("%s: the walk recorded %d calls, a scan finds %d", a.SrcRange, g, w)
				}
				for i := range min(len(r.calls), len(want.calls)) {
					if r.calls[i] != want.calls[i] {
						t.Errorf("%s: call %d is %s, a scan finds %s", a.SrcRange, i, r.calls[i].Name, want.calls[i].Name)
					}
				}
			}

			// The same tree analysed both ways.
			analysed := func(roots *fileScan) *Plan {
				p := &Plan{Filename: "t.hcl", Source: src, Name: "t", Files: map[string]*hcl.File{"t.hcl": file}}
				decodeBody(p, file.Body, roots)
				return p
			}
			if got, want := analysed(scanned), analysed(nil); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s\nthe plan analysed from the walk's records differs from the one analysed by scanning", src)
			}
		}
	}
	if pieces < 50 {
		t.Errorf("only %d files were walked in pieces", pieces)
	}
}

func traversalsText(trs []hcl.Traversal) string {
	var out []string
	for _, tr := range trs {
		out = append(out, traversalText(tr)+"@"+tr.SourceRange().String())
	}
	return strings.Join(out, " ")
}

// TestValidName: the check of a name agrees with hcl's scanner on every
// name of up to three characters from letters, digits, punctuation and
// non-ASCII letters and marks.
func TestValidName(t *testing.T) {
	chars := []string{"a", "Z", "_", "-", "0", "9", ".", " ", "$", "é", "\u0301", "ß", "\x80", "世"}
	names := []string{""}
	for range 3 {
		for _, n := range names {
			for _, c := range chars {
				names = append(names, n+c)
			}
		}
	}
	for _, n := range names {
		if got, want := validName(n), hclsyntax.ValidIdentifier(n); got != want {
			t.Errorf("validName(%q) = %v, hclsyntax.ValidIdentifier %v", n, got, want)
		}
	}
}
