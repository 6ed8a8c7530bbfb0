package views

import (
	"fmt"
	"strings"
)

// doc is the one document writer every view writes through: explain, the
// plan diff, and the attempts' table, show and diff. A view says what a
// document holds (a heading, fields, a list, a fenced block, a table) and
// never asks which format it is written in; each format is one type that
// implements doc (textDoc, markdownDoc). HTML is a third implementation:
// the compiler then lists every method it must have.
//
// The methods come in three families, as the documents have three shapes
// whose layouts the tests pin byte for byte: the report blocks of the
// attempts (heading to table), the outline of explain (subject to
// variable), and the changes of the plan diff (lead to changeElse).
type doc interface {
	// Inline text, to build the strings the blocks take.
	code(s string) string   // source or a value: a code span in Markdown
	strong(s string) string // a status that must stand out: bold in Markdown

	// Report blocks. heading's level 1 is the title, 2 a section, 3 an
	// item in it (a step); the blocks after an item's heading belong to it.
	heading(level int, s string)
	line(s string)                               // a paragraph of one line
	fields(kv ...string)                         // KEY VALUE pairs, aligned; empty values left out
	list(title string, lines []string)           // titled lines (conditions, history)
	verbatim(title, lang string, lines []string) // lines the world wrote, kept as they are but made printable
	table(g *grid)                               // a table inside the document
	grid(g *grid)                                // a table that is the document's body

	// Outline blocks: what explain says of a plan.
	subject(kind, name, file, about string)                    // the document's title: what it explains
	numbered(n int, addr, where, about string)                 // a numbered item: a step and where it runs
	fact(label, value string)                                  // a labelled fact of the item, in words
	codeFact(label string, sub bool, written, resolved string) // an expression as written and resolved; sub: of the fact above
	checklist(label string, items []checkItem)                 // the conditions an item moves on or stops at
	variable(v variableRow)                                    // a variable: name, type, value, rules

	// Change blocks: what a plan diff says changed.
	lead(s string)                                      // the one line that opens the document
	leadCounts(counts, notes string)                    // the opening line as counts, then what to look at
	section(name string)                                // a group of entries
	entry(head string)                                  // a step, variable, local or target that changed
	change(top bool, label, of, text string)            // one change: "label of X: text"; top: of the plan itself
	changeBlock(top bool, label, of, lang, text string) // a change whose value spans lines
	changeElse(top bool, msg string)                    // the error_message of the condition just written

	String() string
}

// checkItem is a condition (source code) or words, with the error_message
// that comes with it.
type checkItem struct {
	text    string
	code    bool
	message string
}

// variableRow is a variable as explain lists it.
type variableRow struct {
	name, typ, value, source, desc string
	rules                          []checkItem
}

func newDoc(f Format) (doc, error) {
	switch f {
	case Text:
		return &textDoc{}, nil
	case Markdown:
		return &markdownDoc{}, nil
	}
	return nil, fmt.Errorf("no document in format %s", f)
}

// codeSpan wraps s in a Markdown code span that survives backticks in it.
func codeSpan(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// fenceFor is a code fence longer than any run of backticks in text.
func fenceFor(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence
}

// grid is a table: aligned text columns or a Markdown table. In text a
// cell wider than maxCell is cut, so one long error message does not push
// the other columns off the screen.
type grid struct {
	head  []string
	rows  [][]string
	right []bool // right-aligned columns (numbers)
}

const maxCell = 60

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }
