package plans

import (
	"bytes"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nativeBounds returns upper bounds of what checkTokens measures in a
// native-syntax file, without making hcl's tokens: the deepest nesting
// (unary operators counted as checkTokens counts them) and the longest
// number literal. hcl's parser lexes the file anyway, and lexing is half
// of what it costs (every token's columns are counted by grapheme), so
// the check reads the bytes once here and lexes again only when a bound
// is over a limit, to report it exactly.
//
// It follows hcl's scanner (hclsyntax/scan_tokens.rl) where a byte's
// meaning depends on where it sits: quoted strings and their escapes,
// heredocs and the line that ends each, template sequences and the brace
// that returns from them, comments. Where knowing a token's extent would
// take hcl's identifier tables it over-counts instead: every - and ! adds
// to the unary run, as if it were an operator, and a number is bounded by
// the run of digits, dots, signs and exponent letters it sits in. A byte
// beyond ASCII in code (not in a string, heredoc or comment) gives up (ok
// false): hcl's identifier tables take the bytes after one whatever they
// are, a bracket, a quote or a newline included.
func nativeBounds(src []byte) (deepest, longest int, ok bool) {
	deepest, longest, _, ok = nativeScan(src, 0)
	return deepest, longest, ok
}

// nativeScan is nativeBounds that also returns, when every is above 0,
// where src may be cut into pieces hcl parses alone (parseCut): after a
// newline in code outside any bracket, brace, string or heredoc, which
// ends a body item of the file's top level, the first such at least
// every bytes after the last cut. A file ever so slightly off what the
// scanner follows gets cuts hcl would not: its pieces then fail to
// parse, and the file is parsed whole.
func nativeScan(src []byte, every int) (deepest, longest int, cuts []int, ok bool) {
	b := boundsScanner{src: src, modes: make([]byte, 1, 16), every: every}
	deepest, longest, ok = b.scan()
	return deepest, longest, b.cuts, ok
}

// What a byte is to the scanner in code.
const (
	codeOther   = iota // a token's byte with nothing to follow
	codeSpace          // space and tab: no token, so a run of unary operators goes on
	codeNumber         // may be in a number literal: digits . e E +
	codeUnary          // - and !: a unary operator, or over-counted as one (- is also in numbers)
	codeOpen           // ( [
	codeClose          // ) ]
	codeSpecial        // { } ~ " # / < and bytes beyond ASCII: see scan
)

var codeClass = func() (t [256]byte) {
	for c := '0'; c <= '9'; c++ {
		t[c] = codeNumber
	}
	for _, c := range ".eE+" {
		t[c] = codeNumber
	}
	t[' '], t['\t'] = codeSpace, codeSpace
	t['-'], t['!'] = codeUnary, codeUnary
	t['('], t['['] = codeOpen, codeOpen
	t[')'], t[']'] = codeClose, codeClose
	for _, c := range "{}~\"#/<" {
		t[c] = codeSpecial
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = codeSpecial
	}
	return t
}()

// The scanner's modes, as hcl's scanner calls them.
const (
	inCode    = iota // main
	inQuoted         // stringTemplate
	inHeredoc        // heredocTemplate
)

type boundsScanner struct {
	src       []byte
	modes     []byte // the scanner's call stack; code at the bottom
	heredocs  []heredoc
	retBraces []int // brace levels at which a } ends a template sequence
	braces    int
	depth     int
	unary     int
	deepest   int

	every int   // the fewest bytes between cuts, 0 for none
	cuts  []int // nativeScan's
}

type heredoc struct {
	marker      []byte
	startOfLine bool
}

func (b *boundsScanner) note() {
	b.deepest = max(b.deepest, b.depth+b.unary)
}

func (b *boundsScanner) scan() (deepest, longest int, ok bool) {
	src := b.src
	run := 0 // bytes of the number-like run so far
	p := 0
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		p = 3 // the scanner drops a byte order mark
	}
	for p < len(src) {
		switch b.modes[len(b.modes)-1] {
		case inCode:
			c := src[p]
			class := codeClass[c]
			if class == codeNumber || c == '-' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
			switch class {
			case codeSpace:
				p++
				continue
			case codeUnary:
				b.unary++
				b.note()
				p++
				continue
			}
			b.unary = 0
			switch class {
			case codeOpen:
				b.depth++
				b.note()
			case codeClose:
				b.depth--
			case codeSpecial:
				next, ok := b.special(p)
				if !ok {
					return 0, 0, false
				}
				p = next
				continue
			}
			if c == '\n' && b.every > 0 && b.depth == 0 && len(b.modes) == 1 {
				b.cut(p + 1)
			}
			p++
		case inQuoted:
			// Only \, $, % and " mean anything in a quoted string.
			i := bytes.IndexAny(src[p:], "\\$%\"")
			if i < 0 {
				p = len(src)
				continue
			}
			p += i
			switch src[p] {
			case '\\':
				p += 2 // an escape takes the next character whatever it is
			case '$', '%':
				p = b.sequence(p)
				run = 0
			case '"':
				b.depth--
				b.modes = b.modes[:len(b.modes)-1]
				p++
			}
		case inHeredoc:
			h := &b.heredocs[len(b.heredocs)-1]
			if h.startOfLine {
				if closed, next := heredocEnd(src, p, h.marker); closed {
					b.depth--
					b.heredocs = b.heredocs[:len(b.heredocs)-1]
					b.modes = b.modes[:len(b.modes)-1]
					p = next // the newline is the code's
					continue
				} else if next > p {
					p = next // bytes that are not UTF-8 leave the line's start
					continue
				}
				h.startOfLine = false
			}
			// Only $, % and the newline mean anything in a heredoc.
			i := bytes.IndexAny(src[p:], "$%\n")
			if i < 0 {
				p = len(src)
				continue
			}
			p += i
			if src[p] == '\n' {
				h.startOfLine = true
				p++
				continue
			}
			p = b.sequence(p)
			run = 0
		}
	}
	return b.deepest, longest, true
}

// cut notes that the file may be cut at p, if it is every bytes past
// the last cut and not at the end.
func (b *boundsScanner) cut(p int) {
	last := 0
	if n := len(b.cuts); n > 0 {
		last = b.cuts[n-1]
	}
	if p-last >= b.every && p < len(b.src) {
		b.cuts = append(b.cuts, p)
	}
}

// special reads the code at src[p] that opens or closes something, or
// starts a comment or a heredoc, and returns the offset after it; ok is
// false for a byte beyond ASCII.
func (b *boundsScanner) special(p int) (next int, ok bool) {
	src := b.src
	c := src[p]
	switch c {
	case '{':
		b.depth++
		b.braces++
		b.note()
	case '~', '}':
		if c == '~' {
			if p+1 >= len(src) || src[p+1] != '}' {
				break // a ~ alone
			}
			p++
		}
		b.depth--
		if n := len(b.retBraces); n > 0 && b.retBraces[n-1] == b.braces {
			b.retBraces = b.retBraces[:n-1]
			b.modes = b.modes[:len(b.modes)-1]
		}
		b.braces--
	case '"':
		b.depth++
		b.note()
		b.modes = append(b.modes, inQuoted)
	case '#':
		return lineEnd(src, p), true
	case '/':
		if p+1 < len(src) && src[p+1] == '/' {
			return lineEnd(src, p), true
		}
		if p+1 < len(src) && src[p+1] == '*' {
			if end := bytes.Index(src[p+2:], []byte("*/")); end >= 0 {
				return p + 2 + end + 2, true
			}
			// Unclosed, it is a / and the scanner goes on after it.
		}
	case '<':
		marker, next, sure := heredocIntro(src, p)
		if !sure {
			return 0, false
		}
		if marker != nil {
			b.depth++
			b.note()
			b.heredocs = append(b.heredocs, heredoc{marker: marker, startOfLine: true})
			b.modes = append(b.modes, inHeredoc)
			return next, true
		}
	default: // beyond ASCII
		return 0, false
	}
	return p + 1, true
}

// sequence reads the $ or % at src[p] in a template: it starts an
// interpolation or a directive before a {, unless doubled ($${ and %%{
// are escapes). It returns the offset after what it read.
func (b *boundsScanner) sequence(p int) int {
	src := b.src
	if p+1 < len(src) && src[p+1] == '{' {
		b.depth++
		b.braces++
		b.retBraces = append(b.retBraces, b.braces)
		if len(b.heredocs) > 0 {
			b.heredocs[len(b.heredocs)-1].startOfLine = false
		}
		b.modes = append(b.modes, inCode)
		b.unary = 0
		b.note()
		return p + 2
	}
	if p+2 < len(src) && src[p+1] == src[p] && src[p+2] == '{' {
		return p + 3
	}
	return p + 1
}

// lineEnd is the offset after the line comment at src[p]: past its
// newline, which the comment takes.
func lineEnd(src []byte, p int) int {
	if nl := bytes.IndexByte(src[p:], '\n'); nl >= 0 {
		return p + nl + 1
	}
	return len(src)
}

// heredocIntro reads "<<MARKER" or "<<-MARKER" and its newline at
// src[p], returning the marker and the offset after the newline, or a nil
// marker when there is none. It is not sure (false) of a line beyond
// ASCII, for the reason nativeBounds gives.
func heredocIntro(src []byte, p int) (marker []byte, next int, sure bool) {
	if p+1 >= len(src) || src[p+1] != '<' {
		return nil, 0, true
	}
	q := p + 2
	if q < len(src) && src[q] == '-' {
		q++
	}
	nl := bytes.IndexByte(src[q:], '\n')
	line := src[q:]
	if nl >= 0 {
		line = line[:nl]
	}
	for _, c := range line {
		if c >= 0x80 {
			return nil, 0, false
		}
	}
	marker = bytes.TrimSuffix(line, []byte("\r"))
	if nl < 0 || len(marker) == 0 || !hclsyntax.ValidIdentifier(string(marker)) {
		return nil, 0, true
	}
	return marker, q + nl + 1, true
}

// heredocEnd tells whether the line at src[p], the start of a line in a
// heredoc, ends it, as hcl's scanner reads it: the line's first literal
// (after any bytes that are not UTF-8, which the scanner reports apart)
// runs to the newline, so holds no $ or %, and is the marker once spaces
// are trimmed. next is where the newline starts when it ends the heredoc,
// else after the bytes that are not UTF-8.
func heredocEnd(src []byte, p int, marker []byte) (closed bool, next int) {
	q := p
	for q < len(src) && utf8Width(src, q) == 0 {
		q++
	}
	if q > p {
		return false, q
	}
	r := q
	for r < len(src) {
		c := src[r]
		if c == '\r' || c == '\n' || c == '$' || c == '%' {
			break
		}
		w := utf8Width(src, r)
		if w == 0 {
			break
		}
		r += w
	}
	eol := r
	if eol < len(src) && src[eol] == '\r' {
		eol++
	}
	if eol >= len(src) || src[eol] != '\n' {
		return false, p
	}
	if !bytes.Equal(bytes.TrimSpace(src[q:eol+1]), marker) {
		return false, p
	}
	return true, r
}

// utf8Width is the length of the character at src[i] as hcl's scanner
// takes it (a lead byte and its continuation bytes; overlong forms
// pass), or 0 for a byte it reports as not UTF-8.
func utf8Width(src []byte, i int) int {
	c := src[i]
	n := 0
	switch {
	case c < 0x80:
		return 1
	case c >= 0xC0 && c <= 0xDF:
		n = 1
	case c >= 0xE0 && c <= 0xEF:
		n = 2
	case c >= 0xF0 && c <= 0xF7:
		n = 3
	default:
		return 0
	}
	if i+n >= len(src) {
		return 0
	}
	for k := 1; k <= n; k++ {
		if src[i+k] < 0x80 || src[i+k] > 0xBF {
			return 0
		}
	}
	return n + 1
}
