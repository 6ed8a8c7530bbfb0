package views

import (
	"bytes"
	"fmt"
	"strings"

	"lockstep/terminal"
)

// markdownDoc writes a document as GitHub-flavoured Markdown, for a pull
// request or an issue: what comes from the plan or the world goes in code
// spans or fences, so Markdown never acts on it.
type markdownDoc struct {
	b        bytes.Buffer
	varTable bool // the variables table has its header
}

var _ doc = (*markdownDoc)(nil)

func (m *markdownDoc) String() string { return m.b.String() }

func (m *markdownDoc) code(s string) string   { return codeSpan(s) }
func (m *markdownDoc) strong(s string) string { return "**" + s + "**" }

// lineSpan is s on one line, as a code span.
func lineSpan(s string) string { return codeSpan(oneLine(s)) }

// inline keeps a value from being read as Markdown: a code span where it
// holds characters Markdown would act on.
func inline(s string) string {
	s = oneLine(s)
	if !strings.ContainsAny(s, "*_`[]<>#|\\") {
		return s
	}
	return codeSpan(s)
}

// blank ends the paragraph before a block, unless one ended it already.
func (m *markdownDoc) blank() {
	if m.b.Len() > 0 && !bytes.HasSuffix(m.b.Bytes(), []byte("\n\n")) {
		m.b.WriteString("\n")
	}
}

func (m *markdownDoc) heading(level int, s string) {
	m.blank()
	m.b.WriteString(strings.Repeat("#", level+1) + " " + s + "\n\n")
}

func (m *markdownDoc) line(s string) { m.b.WriteString(s + "\n\n") }

func (m *markdownDoc) fields(kv ...string) {
	wrote := false
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		wrote = true
		m.b.WriteString("- **" + kv[i] + "**: " + inline(kv[i+1]) + "\n")
	}
	if wrote {
		m.b.WriteString("\n")
	}
}

func (m *markdownDoc) list(title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if title != "" {
		m.b.WriteString(title + ":\n\n")
	}
	for _, l := range lines {
		m.b.WriteString("- " + lineSpan(l) + "\n")
	}
	m.b.WriteString("\n")
}

func (m *markdownDoc) verbatim(title, lang string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if title != "" {
		m.b.WriteString(title + ":\n\n")
	}
	shown := make([]string, len(lines))
	for i, l := range lines {
		shown[i] = terminal.Printable(l)
	}
	body := strings.Join(shown, "\n")
	fence := fenceFor(body)
	m.b.WriteString(fence + lang + "\n" + body + "\n" + fence + "\n\n")
}

func (m *markdownDoc) table(g *grid) { m.b.WriteString(markdownGrid(g) + "\n") }
func (m *markdownDoc) grid(g *grid)  { m.b.WriteString(markdownGrid(g)) }

func markdownGrid(g *grid) string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + cell(c) + " |")
		}
		b.WriteString("\n")
	}
	row(g.head)
	b.WriteString("|")
	for i := range g.head {
		if i < len(g.right) && g.right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range g.rows {
		row(r)
	}
	return b.String()
}

// cell is s in a table cell: one line, its pipes escaped.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

func (m *markdownDoc) subject(kind, name, file, about string) {
	fmt.Fprintf(&m.b, "## %s %s\n\n", kind, codeSpan(name))
	if about != "" {
		fmt.Fprintf(&m.b, "%s\n\n", about)
	}
	fmt.Fprintf(&m.b, "File: %s\n", codeSpan(file))
}

func (m *markdownDoc) numbered(n int, addr, where, about string) {
	m.blank()
	fmt.Fprintf(&m.b, "#### %d. %s on %s\n\n", n, codeSpan(addr), codeSpan(where))
	if about != "" {
		fmt.Fprintf(&m.b, "%s\n\n", about)
	}
}

func (m *markdownDoc) fact(label, value string) {
	fmt.Fprintf(&m.b, "- **%s:** %s\n", label, value)
}

func (m *markdownDoc) codeFact(label string, sub bool, written, resolved string) {
	pad := ""
	if sub {
		pad = "  " // an attribute of the probe or load above
	}
	if !strings.Contains(written, "\n") && !strings.Contains(resolved, "\n") {
		fmt.Fprintf(&m.b, "%s- **%s:** %s\n", pad, label, codeSpan(written))
		if resolved != "" {
			fmt.Fprintf(&m.b, "%s  - resolved: %s\n", pad, codeSpan(resolved))
		}
		return
	}
	in := pad + "  "
	fence := fenceFor(written + "\n" + resolved)
	fmt.Fprintf(&m.b, "%s- **%s:**\n\n%s%s\n%s%s\n%s%s\n", pad, label, in, fence, in, indentMore(written, in), in, fence)
	if resolved != "" {
		fmt.Fprintf(&m.b, "\n%sresolved:\n\n%s%s\n%s%s\n%s%s\n", in, in, fence, in, indentMore(resolved, in), in, fence)
	}
}

func (m *markdownDoc) checklist(label string, items []checkItem) {
	fmt.Fprintf(&m.b, "- **%s:**\n", label)
	for _, it := range items {
		text := it.text
		if it.code {
			text = lineSpan(text)
		}
		if it.message != "" {
			fmt.Fprintf(&m.b, "  - %s (else: %s)\n", text, it.message)
		} else {
			fmt.Fprintf(&m.b, "  - %s\n", text)
		}
	}
}

func (m *markdownDoc) variable(v variableRow) {
	if !m.varTable {
		m.varTable = true
		m.blank()
		m.b.WriteString("| Variable | Type | Value | Description |\n|---|---|---|---|\n")
	}
	value := codeSpan(v.value)
	if v.source != "" && v.source != "default" {
		value += " from " + v.source
	}
	var parts []string
	if v.desc != "" {
		parts = append(parts, v.desc)
	}
	for _, r := range v.rules {
		parts = append(parts, "must hold: "+lineSpan(r.text))
	}
	desc := strings.Join(parts, "; ")
	fmt.Fprintf(&m.b, "| %s | %s | %s | %s |\n", codeSpan(v.name), codeSpan(v.typ), strings.ReplaceAll(value, "|", `\|`), strings.ReplaceAll(desc, "|", `\|`))
}

func (m *markdownDoc) lead(s string) { m.b.WriteString(s + "\n") }

func (m *markdownDoc) leadCounts(counts, notes string) {
	// Bold the counts, not the details after them.
	line := "**" + upperFirst(counts) + "**"
	if notes != "" {
		line += "; " + notes
	}
	m.b.WriteString(line + ".\n")
}

func (m *markdownDoc) section(name string) { fmt.Fprintf(&m.b, "\n#### %s\n\n", name) }

func (m *markdownDoc) entry(head string) { fmt.Fprintf(&m.b, "- %s\n", head) }

func (m *markdownDoc) changePads(top bool) (pad, inner string) {
	if top {
		return "- ", "  "
	}
	return "  - ", "    "
}

func (m *markdownDoc) changeHead(top bool, label, of string) string {
	pad, _ := m.changePads(top)
	if of == "" {
		return pad + "**" + label + ":**"
	}
	return pad + "**" + label + "**" + of + ":"
}

func (m *markdownDoc) change(top bool, label, of, text string) {
	head := m.changeHead(top, label, of)
	if text == "" {
		fmt.Fprintf(&m.b, "%s\n", strings.TrimSuffix(head, ":"))
		return
	}
	fmt.Fprintf(&m.b, "%s %s\n", head, text)
}

func (m *markdownDoc) changeBlock(top bool, label, of, lang, text string) {
	_, inner := m.changePads(top)
	fence := fenceFor(text)
	fmt.Fprintf(&m.b, "%s\n\n%s%s%s\n%s%s\n%s%s\n", m.changeHead(top, label, of), inner, fence, lang, inner, indentMore(text, inner), inner, fence)
}

func (m *markdownDoc) changeElse(top bool, msg string) {
	_, inner := m.changePads(top)
	if !strings.Contains(msg, "\n") {
		m.b.Truncate(m.b.Len() - 1) // the change's line break
		fmt.Fprintf(&m.b, " (else: %s)\n", msg)
		return
	}
	fmt.Fprintf(&m.b, "%s- else: %s\n", inner, msg)
}
