package terminal

import (
	"strings"
	"unicode/utf8"
)

// How many characters of one line from the world the plain lines show: a
// log line or a value, and a summary or a reason that quotes several. The
// live view cuts to the terminal's width.
const (
	MaxShown       = 300
	MaxShownReason = 2000
)

// Printable makes text the world wrote (a log line, a value read, a
// reason quoting them) safe to print as one line of ours: ANSI escape
// sequences (CSI, OSC and the other ESC sequences, and their C1 forms)
// are dropped, so a server's colours or cursor moves cannot redraw our
// output; a tab, \r, \n and the other line breaks become a space; other
// control characters are dropped; a line longer than MaxShown characters
// is cut with "…". Invalid UTF-8 shows as U+FFFD.
func Printable(s string) string { return PrintableCut(s, MaxShown) }

// PrintableCut is Printable with at most max characters.
func PrintableCut(s string, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == 0x1b || r == 0x9b:
			i = skipEscape(s, i, r == 0x9b)
			continue
		case r == '\t' || r == '\r' || r == '\n' || r == '\v' || r == '\f':
			r = ' '
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			continue
		}
		if n == max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// skipEscape returns where the escape sequence begun before i ends: csi
// says the sequence is already inside a CSI (U+009B).
func skipEscape(s string, i int, csi bool) int {
	if !csi {
		if i >= len(s) {
			return i
		}
		switch c := s[i]; {
		case c == '[':
			csi = true
			i++
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			// A string (OSC, DCS...) ends at BEL or ST (ESC \).
			for i++; i < len(s); i++ {
				if s[i] == 0x07 {
					return i + 1
				}
				if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
					return i + 2
				}
			}
			return i
		default:
			// ESC, then intermediates (0x20-0x2F), then one final byte.
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
				i++
			}
			if i < len(s) {
				i++
			}
			return i
		}
	}
	// CSI: parameters and intermediates (0x20-0x3F), then a final byte
	// (0x40-0x7E).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}
