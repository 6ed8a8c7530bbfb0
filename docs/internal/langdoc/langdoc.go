// Package langdoc renders the reference tables of docs/language.md from
// plans.Language(), so the reference lists exactly what the decoder
// accepts. The prose around the tables is written by hand; the tables sit
// between markers that Update rewrites:
//
//	<!-- BEGIN GENERATED: probes -->
//	...
//	<!-- END GENERATED: probes -->
//
// Headings of schema items are code only (### `probe "http"`), and the
// first column of every generated table is a name in backticks: the docs
// test reads them back that way to check the reference against the schema.
package langdoc

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/schema"
)

// Section names, in the order they appear in language.md.
const (
	SectionBlocks    = "blocks"
	SectionStep      = "step"
	SectionStepKinds = "step-kinds"
	SectionProbes    = "probes"
	SectionLoads     = "loads"
	SectionFunctions = "functions"
)

// Sections renders every generated section of the reference.
func Sections(l *plans.Schema) map[string]string {
	return map[string]string{
		SectionBlocks:    blocks(l),
		SectionStep:      step(l),
		SectionStepKinds: stepKinds(l),
		SectionProbes:    probes(l),
		SectionLoads:     loads(l),
		SectionFunctions: functions(l),
	}
}

var marker = regexp.MustCompile(`(?m)^<!-- (BEGIN|END) GENERATED: ([a-z-]+)[^>]*-->\n`)

// Update replaces the body of every generated section of doc with the
// sections given. Every section must appear exactly once, with a BEGIN
// and an END marker, so a lost marker is an error rather than a section
// that silently stops being updated.
func Update(doc []byte, sections map[string]string) ([]byte, error) {
	locs := marker.FindAllSubmatchIndex(doc, -1)
	var out bytes.Buffer
	seen := map[string]bool{}
	last := 0
	for i := 0; i < len(locs); i += 2 {
		begin := locs[i]
		kind, name := string(doc[begin[2]:begin[3]]), string(doc[begin[4]:begin[5]])
		if kind != "BEGIN" {
			return nil, fmt.Errorf("END GENERATED: %s without its BEGIN", name)
		}
		if i+1 >= len(locs) {
			return nil, fmt.Errorf("BEGIN GENERATED: %s without its END", name)
		}
		end := locs[i+1]
		if k, n := string(doc[end[2]:end[3]]), string(doc[end[4]:end[5]]); k != "END" || n != name {
			return nil, fmt.Errorf("BEGIN GENERATED: %s is followed by %s GENERATED: %s", name, k, n)
		}
		body, ok := sections[name]
		if !ok {
			return nil, fmt.Errorf("no generated section named %q", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("section %q appears twice", name)
		}
		seen[name] = true
		out.Write(doc[last:begin[1]])
		out.WriteString(body)
		last = end[0]
	}
	out.Write(doc[last:])
	for name := range sections {
		if !seen[name] {
			return nil, fmt.Errorf("section %q has no markers in the document", name)
		}
	}
	return out.Bytes(), nil
}

// Heading is the text of the heading of a block: the type and its labels
// as a plan writes them, after the path of its parents.
func Heading(parent string, b plans.Block) string {
	h := b.Type
	for _, l := range b.Labels {
		h += fmt.Sprintf(" %q", l)
	}
	if parent != "" {
		h = parent + " › " + h
	}
	return h
}

// DefaultCell is how the Default column shows an attribute.
func DefaultCell(a plans.Attr) string {
	switch {
	case a.Required:
		return "required"
	case a.Default == "":
		return "—"
	case !strings.Contains(a.Default, " "):
		return "`" + a.Default + "`"
	}
	return escape(a.Default)
}

// TypeCell is how the Type column shows an output.
func TypeCell(o plans.Output) string {
	if o.Type == cty.DynamicPseudoType {
		return "any"
	}
	return "`" + typeexpr.TypeString(o.Type) + "`"
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// sentence makes a schema doc, a lower-case phrase, into a sentence: a
// capital (unless it starts with a name such as step.launch.NAME or
// /bin/sh) and a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	first, _, _ := strings.Cut(s, " ")
	if !strings.ContainsAny(first, "._/-=") {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

type doc struct{ b strings.Builder }

func (d *doc) p(format string, args ...any) {
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteString("\n\n")
}

func (d *doc) heading(level int, text string) {
	d.p("%s `%s`", strings.Repeat("#", level), text)
}

func (d *doc) attrs(as []plans.Attr) {
	if len(as) == 0 {
		return
	}
	d.b.WriteString("| Attribute | Default | Description |\n|---|---|---|\n")
	for _, a := range as {
		desc := sentence(a.Doc)
		if a.Const {
			desc += " A constant: no references."
		}
		fmt.Fprintf(&d.b, "| `%s` | %s | %s |\n", a.Name, DefaultCell(a), escape(desc))
	}
	d.b.WriteString("\n")
}

func (d *doc) outputs(os []plans.Output) {
	if len(os) == 0 {
		return
	}
	d.b.WriteString("| Output | Type | Description |\n|---|---|---|\n")
	for _, o := range os {
		fmt.Fprintf(&d.b, "| `%s` | %s | %s |\n", o.Name, TypeCell(o), escape(sentence(o.Doc)))
	}
	d.b.WriteString("\n")
}

func (d *doc) block(level int, parent string, b plans.Block) {
	h := Heading(parent, b)
	d.heading(level, h)
	if b.Doc != "" {
		d.p("%s", sentence(b.Doc))
	}
	if b.Many {
		d.p("May appear more than once.")
	}
	d.attrs(b.Attrs)
	for _, nb := range b.Blocks {
		d.block(level+1, h, nb)
	}
}

func blocks(l *plans.Schema) string {
	var d doc
	for _, b := range l.Blocks {
		if b.Type == "step" {
			continue // the steps section describes it
		}
		d.block(3, "", b)
	}
	return d.b.String()
}

// StepParent is the heading path of the blocks every step accepts.
const StepParent = "step"

func step(l *plans.Schema) string {
	var d doc
	i := slices.IndexFunc(l.Blocks, func(b plans.Block) bool { return b.Type == "step" })
	if i < 0 {
		return ""
	}
	b := l.Blocks[i]
	d.heading(3, Heading("", b))
	d.p("%s", sentence(b.Doc))
	d.p("Every kind accepts these attributes and blocks:")
	d.attrs(l.Step.Attrs)
	for _, nb := range l.Step.Blocks {
		d.block(4, StepParent, nb)
	}
	return d.b.String()
}

// StepKindHeading is the heading of a step kind: step "run".
func StepKindHeading(k plans.StepKind) string { return fmt.Sprintf("step %q", k.Name) }

func stepKinds(l *plans.Schema) string {
	var d doc
	for _, k := range l.Steps {
		h := StepKindHeading(k)
		d.heading(3, h)
		d.p("%s", sentence(k.Doc))
		if len(k.Confirms) > 0 {
			d.p("Checks on its own, before the plan's postconditions: %s.", strings.Join(k.Confirms, "; "))
		}
		if len(k.Attrs) == 0 {
			d.p("No attributes besides those every step has.")
		} else {
			d.attrs(k.Attrs)
		}
		if len(k.Self) == 0 {
			d.p("No `self` outputs: it takes no action. Observe state with probes (`probe.NAME.ATTR`).")
		} else {
			d.p("`self` outputs (and `step.%s.NAME.ATTR` in later steps):", k.Name)
			d.outputs(k.Self)
		}
		for _, nb := range k.Blocks {
			d.block(4, h, nb)
		}
	}
	return d.b.String()
}

// ProbeHeading is the heading of a probe kind: probe "http".
func ProbeHeading(k plans.ProbeKind) string { return fmt.Sprintf("probe %q", k.Name) }

func probes(l *plans.Schema) string {
	var d doc
	for _, k := range l.Probes {
		d.heading(3, ProbeHeading(k))
		d.p("%s", sentence(k.Doc))
		if len(k.OneOf) > 0 {
			names := make([]string, len(k.OneOf))
			for i, n := range k.OneOf {
				names[i] = "`" + n + "`"
			}
			d.p("Set exactly one of %s.", strings.Join(names, ", "))
		}
		if len(k.Attrs) == 0 {
			d.p("No attributes.")
		}
		d.attrs(k.Attrs)
		d.outputs(k.Outputs)
	}
	return d.b.String()
}

// LoadHeading is the heading of a load kind: load "http".
func LoadHeading(k plans.LoadKind) string { return fmt.Sprintf("load %q", k.Name) }

func loads(l *plans.Schema) string {
	var d doc
	for _, k := range l.Loads {
		d.heading(3, LoadHeading(k))
		d.p("%s", sentence(k.Doc))
		d.attrs(k.Attrs)
		d.metrics(k.Metrics)
	}
	return d.b.String()
}

// metrics is a load's metrics table: self.metrics.NAME, which way is
// better (what attempts diff calls better or worse), what it counts.
func (d *doc) metrics(ms []schema.Metric) {
	if len(ms) == 0 {
		return
	}
	d.b.WriteString("| Metric | Better | Meaning |\n|---|---|---|\n")
	for _, m := range ms {
		better := "—"
		if m.Better != schema.Neither {
			better = m.Better.String()
		}
		fmt.Fprintf(&d.b, "| `%s` | %s | %s |\n", m.Name, better, escape(sentence(m.Doc)))
	}
	d.b.WriteString("\n")
}

func functions(l *plans.Schema) string {
	var d doc
	d.b.WriteString("| Function | Description |\n|---|---|\n")
	for _, f := range l.Functions {
		fmt.Fprintf(&d.b, "| `%s` | %s |\n", f.Name, escape(sentence(f.Doc)))
	}
	d.b.WriteString("\n")
	return d.b.String()
}
