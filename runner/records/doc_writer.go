package records

import (
	"strings"
	"unicode/utf8"

	"lockstep/terminal"
)

// page builds a readable document once and renders it as plain text or
// Markdown, so show and diff say the same things in both.
type page struct {
	format string
	b      strings.Builder
	indent string // text only: inside a step

	afterHeading bool // text only: a section heading was the last thing written
}

func newPage(format string) *page { return &page{format: format} }

func (p *page) String() string { return p.b.String() }

// heading: level 1 is the document's title, 2 a section, 3 a step.
func (p *page) heading(level int, s string) {
	if p.format == Markdown {
		if p.b.Len() > 0 && !strings.HasSuffix(p.b.String(), "\n\n") {
			p.b.WriteString("\n")
		}
		p.b.WriteString(strings.Repeat("#", level+1) + " " + s + "\n\n")
		return
	}
	if p.b.Len() > 0 && level < 3 {
		p.b.WriteString("\n")
	}
	p.indent = ""
	if level == 3 && !strings.HasSuffix(p.b.String(), ":\n") && !p.afterHeading {
		p.b.WriteString("\n")
	}
	p.b.WriteString(s + "\n")
	p.afterHeading = level == 2
	if level == 3 {
		p.indent = "    "
	}
}

// line is a paragraph of one line.
func (p *page) line(s string) {
	if p.format == Markdown {
		p.b.WriteString(s + "\n\n")
		return
	}
	p.b.WriteString(p.indent + s + "\n")
}

// fields are KEY VALUE pairs, empty values left out.
func (p *page) fields(kv ...string) {
	width := 0
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			width = max(width, utf8.RuneCountInString(kv[i]))
		}
	}
	wrote := false
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if v == "" {
			continue
		}
		wrote = true
		if p.format == Markdown {
			p.b.WriteString("- **" + k + "**: " + mdInline(v) + "\n")
			continue
		}
		p.b.WriteString(p.indent + k + strings.Repeat(" ", width-utf8.RuneCountInString(k)) + "  " + v + "\n")
	}
	if wrote && p.format == Markdown {
		p.b.WriteString("\n")
	}
}

// list is a titled list of lines (conditions, history).
func (p *page) list(title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if p.format == Markdown {
		if title != "" {
			p.b.WriteString(title + ":\n\n")
		}
		for _, l := range lines {
			p.b.WriteString("- " + mdCode(l) + "\n")
		}
		p.b.WriteString("\n")
		return
	}
	if title != "" {
		p.b.WriteString(p.indent + title + "\n")
	}
	for _, l := range lines {
		p.b.WriteString(p.indent + "  " + l + "\n")
	}
}

// verbatim is a titled block of text kept as it is (log lines, a diff).
func (p *page) verbatim(title, lang string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if p.format == Markdown {
		if title != "" {
			p.b.WriteString(title + ":\n\n")
		}
		fence := "```"
		shown := make([]string, len(lines))
		for i, l := range lines {
			shown[i] = terminal.Printable(l)
			for strings.Contains(shown[i], fence) {
				fence += "`"
			}
		}
		p.b.WriteString(fence + lang + "\n" + strings.Join(shown, "\n") + "\n" + fence + "\n\n")
		return
	}
	if title != "" {
		p.b.WriteString(p.indent + title + "\n")
	}
	for _, l := range lines {
		// A server's colours, cursor moves and \r redraws must not
		// redraw the reader's terminal.
		p.b.WriteString(p.indent + "  | " + terminal.Printable(l) + "\n")
	}
}

// table is a grid inside the page.
func (p *page) table(g *grid) {
	out := g.render(p.format)
	if p.format == Markdown {
		p.b.WriteString(out + "\n")
		return
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(out, "\n"), "\n") {
		p.b.WriteString(p.indent + "  " + l)
	}
	p.b.WriteString("\n")
}

// mdCode is s as a code span.
func mdCode(s string) string {
	s = oneLine(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// mdInline keeps a value from being read as Markdown: code spans where it
// holds characters Markdown would act on.
func mdInline(s string) string {
	s = oneLine(s)
	if !strings.ContainsAny(s, "*_`[]<>#|\\") {
		return s
	}
	return mdCode(s)
}
