package loads

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// An OpenAI answer, and each event of a streamed one, is read by
// scanChunk: one pass over the JSON that validates all of it, as
// json.Unmarshal does, and looks only at the members that count:
//
//	{"choices": [{"text": S, "message": {"content": S, "reasoning_content": S},
//	              "delta": {"content": S, "reasoning_content": S}}, ...],
//	 "usage": {"prompt_tokens": N, "completion_tokens": N}, "error": ANY}
//
// with encoding/json's meaning: names matched without regard to case
// (bytes.EqualFold, after unescaping), null for an absent member, a value
// of the wrong type an error (a string where an object is due, 1.5 or 1e3
// as a count), any syntax error an error, the text unescaped with invalid
// UTF-8 and lone surrogates as U+FFFD. A name given twice in one object:
// the last counts (encoding/json merges two objects given for one name;
// no server sends either). Decoding each event into a struct was 60% of a
// streamed request's CPU (BenchmarkReadStream: 184 µs for 64 tokens
// through segmentio's decoder); this allocates nothing, and decodes the
// text only when it is kept.

// chunkFields is what counts in one answer or streamed event.
type chunkFields struct {
	text               bool // some choice carries answer or reasoning text
	usage              bool // a usage member that is not null
	prompt, completion int
	// errValue is the error member when it is not null, as sent (it
	// aliases the scanned bytes).
	errValue []byte
}

// maxJSONDepth is encoding/json's limit of nested arrays and objects.
const maxJSONDepth = 10000

// scanChunk reads data into f; with answer and reasoning not nil, it
// appends the text of each choice to them in the order the chunk struct
// of encoding/json would join it (text, message, delta; content to
// answer, reasoning_content to reasoning).
func scanChunk(data []byte, answer, reasoning *strings.Builder, f *chunkFields) error {
	*f = chunkFields{}
	s := jscan{b: data}
	s.ws()
	if s.literal("null") {
		return s.end()
	}
	if err := s.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, done, err := s.member(first, '}')
		if err != nil || done {
			if err == nil {
				err = s.end()
			}
			return err
		}
		switch {
		case keyIs(key, "choices"):
			err = s.choices(answer, reasoning, f)
		case keyIs(key, "usage"):
			err = s.usage(f)
		case keyIs(key, "error"):
			start := s.i
			if err = s.skip(1); err == nil {
				f.errValue = bytes.TrimRight(data[start:s.i], " \t\r\n")
				if string(f.errValue) == "null" {
					f.errValue = nil
				}
			}
		default:
			err = s.skip(1)
		}
		if err != nil {
			return err
		}
	}
}

// choices reads the choices array.
func (s *jscan) choices(answer, reasoning *strings.Builder, f *chunkFields) error {
	if s.literal("null") {
		return nil
	}
	if err := s.open('['); err != nil {
		return err
	}
	for first := true; ; first = false {
		done, err := s.element(first)
		if err != nil || done {
			return err
		}
		if s.literal("null") {
			continue
		}
		if err := s.open('{'); err != nil {
			return err
		}
		// A choice's strings, raw (escapes still in), in the order they
		// are joined: text, message content, delta content; then the two
		// reasoning contents.
		var text [5]jstring
		for first := true; ; first = false {
			key, done, err := s.member(first, '}')
			if err != nil {
				return err
			}
			if done {
				break
			}
			switch {
			case keyIs(key, "text"):
				err = s.stringOrNull(&text[0])
			case keyIs(key, "message"):
				err = s.message(&text[1], &text[3])
			case keyIs(key, "delta"):
				err = s.message(&text[2], &text[4])
			default:
				err = s.skip(3)
			}
			if err != nil {
				return err
			}
		}
		for i, t := range text {
			if len(t.raw) == 0 {
				continue
			}
			f.text = true
			switch {
			case i < 3 && answer != nil:
				t.appendTo(answer)
			case i >= 3 && reasoning != nil:
				t.appendTo(reasoning)
			}
		}
	}
}

// message reads a message or delta object's content and reasoning_content.
func (s *jscan) message(content, reasoning *jstring) error {
	if s.literal("null") {
		*content, *reasoning = jstring{}, jstring{} // a nil pointer, to encoding/json
		return nil
	}
	if err := s.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, done, err := s.member(first, '}')
		if err != nil || done {
			return err
		}
		switch {
		case keyIs(key, "content"):
			err = s.stringOrNull(content)
		case keyIs(key, "reasoning_content"):
			err = s.stringOrNull(reasoning)
		default:
			err = s.skip(4)
		}
		if err != nil {
			return err
		}
	}
}

// usage reads the usage object's token counts.
func (s *jscan) usage(f *chunkFields) error {
	if s.literal("null") {
		f.usage, f.prompt, f.completion = false, 0, 0
		return nil
	}
	if err := s.open('{'); err != nil {
		return err
	}
	f.usage = true
	for first := true; ; first = false {
		key, done, err := s.member(first, '}')
		if err != nil || done {
			return err
		}
		switch {
		case keyIs(key, "prompt_tokens"):
			err = s.intOrNull(&f.prompt)
		case keyIs(key, "completion_tokens"):
			err = s.intOrNull(&f.completion)
		default:
			err = s.skip(2)
		}
		if err != nil {
			return err
		}
	}
}

// jscan is a position in a JSON document.
type jscan struct {
	b []byte
	i int
}

// errJSON is what every syntax and type error of scanChunk wraps.
var errJSON = errors.New("invalid JSON")

func (s *jscan) fail(what string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("%w: unexpected end: %s", errJSON, what)
	}
	return fmt.Errorf("%w: %s at offset %d", errJSON, what, s.i)
}

func (s *jscan) ws() {
	b, i := s.b, s.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// end checks that nothing but whitespace follows the document.
func (s *jscan) end() error {
	s.ws()
	if s.i < len(s.b) {
		return s.fail("data after the value")
	}
	return nil
}

// literal consumes word (and the whitespace after it) if it is next.
func (s *jscan) literal(word string) bool {
	if s.i >= len(s.b) || s.b[s.i] != word[0] || !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	s.ws()
	return true
}

// open consumes c ('{' or '['), or fails on a value of another type.
func (s *jscan) open(c byte) error {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		s.ws()
		return nil
	}
	if c == '{' {
		return s.fail("want an object")
	}
	return s.fail("want an array")
}

// member reads the next member's name and its colon, or the closing
// brace (done); the first member of an object has no comma before it.
func (s *jscan) member(first bool, close byte) (key jstring, done bool, err error) {
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		s.ws()
		return key, true, nil
	}
	if !first {
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			return key, false, s.fail("want a comma or the end of the object")
		}
		s.i++
		s.ws()
	}
	if err := s.str(&key); err != nil {
		return key, false, err
	}
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return key, false, s.fail("want a colon after the name")
	}
	s.i++
	s.ws()
	return key, false, nil
}

// element moves to the next element of an array, or past its end (done).
func (s *jscan) element(first bool) (done bool, err error) {
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.ws()
		return true, nil
	}
	if !first {
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			return false, s.fail("want a comma or the end of the array")
		}
		s.i++
		s.ws()
	}
	return false, nil
}

// jstring is a JSON string's raw content, between its quotes.
type jstring struct {
	raw     []byte
	escaped bool // holds a backslash escape, or bytes beyond ASCII
}

// str reads a string, validating its escapes.
func (s *jscan) str(out *jstring) error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.fail("want a string")
	}
	s.i++
	start := s.i
	special := false
	for s.i < len(s.b) {
		// The common bytes first, a table lookup each, in locals (through
		// s, each byte reloaded s.b and s.i: most of a chunk's time).
		b, i := s.b, s.i
		for i < len(b) && plainInString[b[i]] {
			i++
		}
		s.i = i
		if s.i == len(s.b) {
			break
		}
		switch c := s.b[s.i]; {
		case c == '"':
			*out = jstring{raw: s.b[start:s.i], escaped: special}
			s.i++
			s.ws()
			return nil
		case c < 0x20:
			return s.fail("control character in a string")
		case c == '\\':
			special = true
			if s.i+1 >= len(s.b) {
				s.i = len(s.b)
				return s.fail("escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					s.i++
					return s.fail(`\u escape`)
				}
				s.i += 6
			default:
				s.i++
				return s.fail("escape")
			}
		default: // beyond ASCII
			special = true
			s.i++
		}
	}
	return s.fail("string not closed")
}

// stringOrNull reads a string into out; null leaves out as it was (as
// encoding/json leaves a string field).
func (s *jscan) stringOrNull(out *jstring) error {
	if s.literal("null") {
		return nil
	}
	if s.i < len(s.b) && s.b[s.i] != '"' {
		// encoding/json reads the value before it says its type is wrong
		// (an error either way: its depth does not matter).
		if err := s.skip(0); err != nil {
			return err
		}
		return fmt.Errorf("%w: a text is not a string", errJSON)
	}
	return s.str(out)
}

// intOrNull reads a count: an integer, as encoding/json reads an int.
func (s *jscan) intOrNull(n *int) error {
	if s.literal("null") {
		return nil
	}
	start := s.i
	if err := s.skip(0); err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(bytes.TrimRight(s.b[start:s.i], " \t\r\n")), 10, 0)
	if err != nil {
		return fmt.Errorf("%w: a token count is not an integer: %s", errJSON, s.b[start:s.i])
	}
	*n = int(v)
	return nil
}

// skip reads any value, validating it, and the whitespace after it;
// depth is how many arrays and objects are open around it.
func (s *jscan) skip(depth int) error {
	if s.i >= len(s.b) {
		return s.fail("want a value")
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return s.fail("nested too deep")
		}
		s.i++
		s.ws()
		for first := true; ; first = false {
			var done bool
			var err error
			if c == '{' {
				_, done, err = s.member(first, '}')
			} else {
				done, err = s.element(first)
			}
			if err != nil || done {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == '"':
		var v jstring
		return s.str(&v)
	case c == '-' || isDigit(c):
		return s.number()
	case s.literal("true"), s.literal("false"), s.literal("null"):
		return nil
	}
	return s.fail("want a value")
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jscan) number() error {
	b := s.b
	if b[s.i] == '-' {
		s.i++
	}
	digits := func() bool {
		start := s.i
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
		return s.i > start
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case !digits():
		return s.fail("number")
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if !digits() {
			return s.fail("number")
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return s.fail("number")
		}
	}
	s.ws()
	return nil
}

// plainInString are the bytes a string holds as they are: printable
// ASCII but the quote and the backslash.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// keyIs reports whether a member's name is name, as encoding/json matches
// it to a field: equal under Unicode case folding once unescaped.
func keyIs(key jstring, name string) bool {
	if !key.escaped {
		return len(key.raw) == len(name) && equalFold(key.raw, name)
	}
	var buf [32]byte
	return bytes.EqualFold(key.decode(buf[:0]), []byte(name))
}

// appendTo writes the string's text to b.
func (t jstring) appendTo(b *strings.Builder) {
	if !t.escaped {
		b.Write(t.raw)
		return
	}
	var buf [256]byte
	b.Write(t.decode(buf[:0]))
}

// decode appends the string's text to dst as encoding/json unquotes it.
func (t jstring) decode(dst []byte) []byte {
	r := t.raw
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case c == '\\':
			switch r[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := hex4(r[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(rr) {
					if i+6 <= len(r) && r[i] == '\\' && r[i+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(r[i+2:i+6])); dec != utf8.RuneError {
							i += 6
							dst = utf8.AppendRune(dst, dec)
							continue
						}
					}
					rr = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, r[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			rr, size := utf8.DecodeRune(r[i:])
			if rr == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, r[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case isDigit(c):
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
