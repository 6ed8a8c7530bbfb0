package views

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"lockstep/terminal"
)

// textDoc writes a document as plain text for a terminal: indentation
// instead of markup, tables as aligned columns.
type textDoc struct {
	b      strings.Builder
	indent string // inside an item (a step)

	afterHeading bool // a section heading was the last thing written
}

var _ doc = (*textDoc)(nil)

func (t *textDoc) String() string { return t.b.String() }

func (t *textDoc) code(s string) string   { return s }
func (t *textDoc) strong(s string) string { return s }

func (t *textDoc) heading(level int, s string) {
	if t.b.Len() > 0 && level < 3 {
		t.b.WriteString("\n")
	}
	t.indent = ""
	if level == 3 && !strings.HasSuffix(t.b.String(), ":\n") && !t.afterHeading {
		t.b.WriteString("\n")
	}
	t.b.WriteString(s + "\n")
	t.afterHeading = level == 2
	if level == 3 {
		t.indent = "    "
	}
}

func (t *textDoc) line(s string) { t.b.WriteString(t.indent + s + "\n") }

func (t *textDoc) fields(kv ...string) {
	width := 0
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			width = max(width, utf8.RuneCountInString(kv[i]))
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if v == "" {
			continue
		}
		t.b.WriteString(t.indent + k + strings.Repeat(" ", width-utf8.RuneCountInString(k)) + "  " + v + "\n")
	}
}

func (t *textDoc) list(title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if title != "" {
		t.b.WriteString(t.indent + title + "\n")
	}
	for _, l := range lines {
		t.b.WriteString(t.indent + "  " + l + "\n")
	}
}

func (t *textDoc) verbatim(title, lang string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if title != "" {
		t.b.WriteString(t.indent + title + "\n")
	}
	for _, l := range lines {
		// A server's colours, cursor moves and \r redraws must not
		// redraw the reader's terminal.
		t.b.WriteString(t.indent + "  | " + terminal.Printable(l) + "\n")
	}
}

func (t *textDoc) table(g *grid) {
	for _, l := range strings.SplitAfter(strings.TrimSuffix(textGrid(g), "\n"), "\n") {
		t.b.WriteString(t.indent + "  " + l)
	}
	t.b.WriteString("\n")
}

func (t *textDoc) grid(g *grid) { t.b.WriteString(textGrid(g)) }

func textGrid(g *grid) string {
	var b strings.Builder
	rows := append([][]string{g.head}, g.rows...)
	width := make([]int, len(g.head))
	shown := make([][]string, len(rows))
	for j, r := range rows {
		shown[j] = make([]string, len(r))
		for i, c := range r {
			shown[j][i] = cut(oneLine(c), maxCell)
			width[i] = max(width[i], utf8.RuneCountInString(shown[j][i]))
		}
	}
	for _, r := range shown {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(g.right) && g.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}

func (t *textDoc) subject(kind, name, file, about string) {
	fmt.Fprintf(&t.b, "%s %s (%s)\n", kind, name, file)
	if about != "" {
		fmt.Fprintf(&t.b, "  %s\n", about)
	}
}

func (t *textDoc) numbered(n int, addr, where, about string) {
	fmt.Fprintf(&t.b, "\n%d. %s on target %s\n", n, addr, where)
	if about != "" {
		fmt.Fprintf(&t.b, "   %s\n", about)
	}
}

func (t *textDoc) fact(label, value string) {
	fmt.Fprintf(&t.b, "   %s: %s\n", label, value)
}

func (t *textDoc) codeFact(label string, sub bool, written, resolved string) {
	if sub {
		label = "  " + label
	}
	fmt.Fprintf(&t.b, "   %s: %s\n", label, indentMore(written, "     "))
	if resolved != "" {
		fmt.Fprintf(&t.b, "   %s  resolved: %s\n", strings.Repeat(" ", len(label)), indentMore(resolved, "     "))
	}
}

func (t *textDoc) checklist(label string, items []checkItem) {
	fmt.Fprintf(&t.b, "   %s:\n", label)
	for _, it := range items {
		fmt.Fprintf(&t.b, "     - %s\n", indentMore(it.text, "       "))
		if it.message != "" {
			fmt.Fprintf(&t.b, "       else: %s\n", it.message)
		}
	}
}

func (t *textDoc) variable(v variableRow) {
	fmt.Fprintf(&t.b, "  %s (%s) = %s", v.name, v.typ, v.value)
	if v.source != "" && v.source != "default" {
		fmt.Fprintf(&t.b, " from %s", v.source)
	}
	t.b.WriteString("\n")
	if v.desc != "" {
		fmt.Fprintf(&t.b, "    %s\n", v.desc)
	}
	for _, r := range v.rules {
		fmt.Fprintf(&t.b, "    must hold: %s\n", indentMore(r.text, "      "))
		if r.message != "" {
			fmt.Fprintf(&t.b, "      else: %s\n", r.message)
		}
	}
}

func (t *textDoc) lead(s string) { t.b.WriteString(s + "\n") }

func (t *textDoc) leadCounts(counts, notes string) {
	if notes != "" {
		counts += "; " + notes
	}
	t.b.WriteString(upperFirst(counts) + ".\n")
}

func (t *textDoc) section(name string) { fmt.Fprintf(&t.b, "\n%s\n", name) }

func (t *textDoc) entry(head string) { fmt.Fprintf(&t.b, "  %s\n", head) }

// changePads is the indentation of a change's line and of what follows
// it.
func (t *textDoc) changePads(top bool) (pad, inner string) {
	if top {
		return "  ", "    "
	}
	return "    ", "      "
}

func (t *textDoc) change(top bool, label, of, text string) {
	pad, _ := t.changePads(top)
	if text == "" {
		fmt.Fprintf(&t.b, "%s%s%s\n", pad, label, of)
		return
	}
	fmt.Fprintf(&t.b, "%s%s%s: %s\n", pad, label, of, text)
}

func (t *textDoc) changeBlock(top bool, label, of, lang, text string) {
	pad, inner := t.changePads(top)
	fmt.Fprintf(&t.b, "%s%s%s:\n%s%s\n", pad, label, of, inner, indentMore(text, inner))
}

func (t *textDoc) changeElse(top bool, msg string) {
	_, inner := t.changePads(top)
	fmt.Fprintf(&t.b, "%selse: %s\n", inner, indentMore(msg, inner+"      "))
}
