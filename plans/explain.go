package plans

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Explain describes in words what each step of p does and what it must
// observe to move on, in file order, followed by the variables. With a
// Scope, commands and other values are also shown resolved (sensitive
// parts as (sensitive)); with a nil Scope they are shown as written.
// format is "text" or "markdown" (for a pull request). The output depends
// only on its inputs.
func Explain(p *Plan, s *Scope, format string) (string, error) {
	var w explainer
	switch format {
	case "text", "":
		w = &textExplainer{}
	case "markdown", "md":
		w = &markdownExplainer{}
	default:
		return "", fmt.Errorf("unknown explain format %q (want text or markdown)", format)
	}
	e := &explain{plan: p, scope: s, lang: Language(), w: w}
	e.run()
	return w.String(), nil
}

// explainer renders the parts of an explanation; text and markdown differ
// only in layout.
type explainer interface {
	title(name, desc, file string)
	section(name string)
	step(n int, addr, kind, target, desc string)
	field(label, value string)            // a one-line fact
	code(label, written, resolved string) // an expression, as written and resolved
	list(label string, items []item)
	variable(v varInfo)
	String() string
}

type item struct {
	text    string // the condition's source, or words
	code    bool   // text is source code
	message string // error_message, when given
}

type varInfo struct {
	name, typ, value, source, desc string
	rules                          []item
}

type explain struct {
	plan  *Plan
	scope *Scope
	lang  *Schema
	w     explainer
}

func (e *explain) run() {
	p := e.plan
	e.w.title(p.Name, p.Description, p.Filename)
	e.w.section("Steps")
	for i, s := range p.Steps {
		e.step(i+1, s)
	}
	if len(p.Variables) > 0 {
		e.w.section("Variables")
		for _, v := range p.Variables {
			e.w.variable(e.variable(v))
		}
	}
}

func (e *explain) step(n int, s *Step) {
	kind := e.lang.StepKind(s.Kind)
	e.w.step(n, s.Addr(), s.Kind, e.targetText(s.Target), s.Description)
	if kind == nil {
		return
	}
	switch s.Kind {
	case "run":
		e.code("Runs", s.Command)
	case "launch":
		e.code("Starts", s.Command)
		if s.Log != nil {
			e.code("Log", s.Log)
		} else {
			e.w.field("Log", "a fresh file under .lockstep/")
		}
		if s.Pidfile != nil {
			e.code("Follows the daemon named in", s.Pidfile)
		}
	case "wait":
		e.w.field("Action", "none: polls its probes and conditions")
	case "assert":
		e.w.field("Action", "none: checks its probes and conditions")
	case "benchmark":
		if s.Load != nil {
			e.w.field("Load", s.Load.Kind+" load")
			for _, name := range e.attrOrder(s.Load.Attrs, e.loadAttrNames(s.Load.Kind)) {
				e.code("  "+name, s.Load.Attrs[name])
			}
		}
		if s.Command != nil {
			e.code("Runs", s.Command)
			for _, m := range s.Metrics {
				how := "regex " + quote(m.Regex)
				if m.JSON != "" {
					how = "json path " + m.JSON
				}
				e.w.field("Metric "+m.Name, how)
			}
		}
		if s.Repeat > 1 {
			e.w.field("Repeats", fmt.Sprintf("%d times (metrics give values, median, min, max, stddev)", s.Repeat))
		}
	}
	if s.Env != nil {
		e.code("Env", s.Env)
	}
	if s.Workdir != nil {
		e.code("Workdir", s.Workdir)
	}
	for _, pr := range s.Probes {
		e.probe(pr)
	}

	var moves []item
	confirms := kind.Confirms
	if s.Kind == "benchmark" {
		// Say which of the two a benchmark does.
		confirms = []string{"the command exits with status 0"}
		if s.Load != nil {
			confirms = []string{"the load completes"}
		}
	}
	for _, c := range confirms {
		if strings.Contains(c, "grace") {
			c += ": " + e.durationText(s.Grace, "2s")
		}
		moves = append(moves, item{text: c})
	}
	for _, c := range s.Postconditions {
		moves = append(moves, e.condition(c))
	}
	if len(moves) == 0 {
		moves = append(moves, item{text: "nothing: it has no postcondition"})
	}
	e.w.list("Moves on when", moves)
	if len(s.AbortIfs) > 0 {
		var stops []item
		for _, c := range s.AbortIfs {
			stops = append(stops, e.condition(c))
		}
		e.w.list("Stops at once if", stops)
	}
	if s.Kind == "assert" && s.Timeout == nil {
		e.w.field("Gives up", "at once: checks a single time (set timeout to retry)")
	} else {
		e.w.field("Gives up after", e.durationText(s.Timeout, kind.DefaultTimeout))
		e.w.field("Checks every", e.durationText(s.Interval, kind.DefaultInterval))
	}
	if s.Progress != nil {
		e.code("Progress", s.Progress)
	}
	if s.Always {
		e.w.field("Always runs", "yes, even after an earlier step failed")
	} else {
		e.w.field("Always runs", "no: skipped once a step has failed")
	}
	if s.Keep {
		e.w.field("Keeps", "what it launched running after the plan ends")
	}
}

// targetText names a target and, for an SSH one, where it connects:
// "gpu (ssh root@gpu-node-1)".
func (e *explain) targetText(name string) string {
	t := e.plan.Target(name)
	if t == nil || t.SSH == nil || t.SSH.Host == nil {
		return name
	}
	host := e.plainText(t.SSH.Host)
	if t.SSH.User != nil {
		host = e.plainText(t.SSH.User) + "@" + host
	}
	return name + " (ssh " + host + ")"
}

// plainText is an expression's value when known before the run, else its
// source.
func (e *explain) plainText(expr hcl.Expression) string {
	written, resolved := e.texts(expr)
	if resolved != "" {
		return resolved
	}
	return written
}

func (e *explain) probe(pr *Probe) {
	head := pr.Kind + " probe"
	if pr.Step != "" {
		head += " on step." + pr.Step
	}
	if pr.Since != "" {
		head += " since step." + pr.Since + " started"
	}
	if sum := e.lang.ProbeSummary(pr, e.scope); sum != "" {
		head += " (" + sum + ")"
	}
	e.w.field(fmt.Sprintf("Probe %q", pr.Name), head)
	var names []string
	if k := e.lang.ProbeKind(pr.Kind); k != nil {
		for _, a := range k.Attrs {
			names = append(names, a.Name)
		}
	}
	for _, name := range e.attrOrder(pr.Attrs, names) {
		e.code("  "+name, pr.Attrs[name])
	}
}

// attrOrder lists the attributes set, in the schema's order.
func (e *explain) attrOrder(attrs map[string]hcl.Expression, order []string) []string {
	var out []string
	for _, name := range order {
		if _, ok := attrs[name]; ok {
			out = append(out, name)
		}
	}
	var rest []string
	for name := range attrs {
		if !slices.Contains(order, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func (e *explain) loadAttrNames(kind string) []string {
	var out []string
	if k := e.lang.LoadKind(kind); k != nil {
		for _, a := range k.Attrs {
			out = append(out, a.Name)
		}
	}
	return out
}

func (e *explain) condition(c *Condition) item {
	it := item{text: c.Source, code: true}
	if c.ErrorMessage != nil {
		written, resolved := e.texts(c.ErrorMessage)
		if resolved != "" {
			it.message = resolved
		} else if v, ds := c.ErrorMessage.Value(nil); !ds.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			it.message = v.AsString()
		} else {
			it.message = written
		}
	}
	return it
}

func (e *explain) durationText(expr hcl.Expression, def string) string {
	if expr == nil {
		if def == "" {
			return "(none)"
		}
		return def + " (the default)"
	}
	written, resolved := e.texts(expr)
	if resolved != "" {
		return resolved
	}
	return written
}

func (e *explain) code(label string, expr hcl.Expression) {
	written, resolved := e.texts(expr)
	if resolved == written {
		resolved = ""
	}
	e.w.code(label, written, resolved)
}

// texts returns an expression's source text and, when a Scope is given and
// the value is known before the plan runs, its value as text. Literal
// strings come back unquoted.
func (e *explain) texts(expr hcl.Expression) (written, resolved string) {
	written = e.source(expr)
	if v, ds := expr.Value(nil); !ds.HasErrors() && v.IsWhollyKnown() && v.Type() == cty.String && !v.IsNull() {
		// A literal: show it as the reader would type it in a shell.
		return v.AsString(), ""
	}
	if e.scope == nil || !resolvable(expr) {
		return written, ""
	}
	return written, e.resolve(expr)
}

// dedent removes from the second and later lines of s the indentation of
// the line s starts on, so source cut out of a block reads at its own
// level.
func dedent(s string, indent int) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		lines[i] = l[min(n, indent):]
	}
	return strings.Join(lines, "\n")
}

// resolvable tells whether expr refers to something and only to what is
// known before the plan runs: variables, locals, targets.
func resolvable(expr hcl.Expression) bool {
	refs := expr.Variables()
	for _, tr := range refs {
		switch tr.RootName() {
		case "var", "local", "target":
		default:
			return false
		}
	}
	return len(refs) > 0
}

// source returns expr as written; a quoted template loses its quotes, as
// a command reads better without them.
func (e *explain) source(expr hcl.Expression) string {
	r := expr.Range()
	src := e.plan.Source
	if r.Filename != e.plan.Filename || r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	lineStart := strings.LastIndexByte(string(src[:r.Start.Byte]), '\n') + 1
	line := string(src[lineStart:r.Start.Byte])
	indent := len(line) - len(strings.TrimLeft(line, " \t"))
	text := dedent(string(src[r.Start.Byte:r.End.Byte]), indent)
	if _, ok := expr.(*hclsyntax.TemplateExpr); ok {
		switch {
		case strings.HasPrefix(text, "<<"):
			text = heredocBody(text)
		case len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"':
			text = text[1 : len(text)-1]
		}
	}
	return text
}

// heredocBody returns a heredoc's lines without its markers and without
// the indentation they share.
func heredocBody(text string) string {
	lines := strings.Split(text, "\n")
	if len(lines) < 3 {
		return text
	}
	lines = lines[1 : len(lines)-1]
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " \t")); common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		lines[i] = l[min(max(common, 0), len(l)):]
	}
	return strings.Join(lines, "\n")
}

// resolve evaluates expr against the Scope; "" when it depends on the run
// (steps, probes, self). Sensitive parts show as (sensitive) and the rest
// as resolved (Show).
func (e *explain) resolve(expr hcl.Expression) string {
	ctx := e.scope.EvalContext(nil)
	if v, ds := expr.Value(ctx); ds.HasErrors() || !v.IsWhollyKnown() {
		return ""
	}
	sh, ds := Show(expr, ctx)
	if ds.HasErrors() {
		return ""
	}
	return sh.Text
}

func (e *explain) variable(v *Variable) varInfo {
	info := varInfo{name: v.Name, desc: v.Description, typ: typeexpr.TypeString(v.Type)}
	switch {
	case e.scope != nil && e.scope.Vars[v.Name] != cty.NilVal:
		info.value = showValue(e.scope.Vars[v.Name])
		info.source = e.scope.Sources[v.Name]
	case v.Default == cty.NilVal:
		info.value = "(required: no default)"
	case v.Sensitive:
		info.value = "(sensitive)"
		info.source = "default"
	default:
		info.value = showValue(v.Default)
		info.source = "default"
	}
	if v.Sensitive && info.value != "(required: no default)" {
		info.value = "(sensitive)"
	}
	for _, c := range v.Validations {
		info.rules = append(info.rules, e.condition(c))
	}
	return info
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

type textExplainer struct{ b strings.Builder }

func (t *textExplainer) title(name, desc, file string) {
	fmt.Fprintf(&t.b, "Plan %s (%s)\n", name, file)
	if desc != "" {
		fmt.Fprintf(&t.b, "  %s\n", desc)
	}
}

func (t *textExplainer) section(name string) {
	fmt.Fprintf(&t.b, "\n%s\n", name)
}

func (t *textExplainer) step(n int, addr, kind, target, desc string) {
	fmt.Fprintf(&t.b, "\n%d. %s on target %s\n", n, addr, target)
	if desc != "" {
		fmt.Fprintf(&t.b, "   %s\n", desc)
	}
}

func (t *textExplainer) field(label, value string) {
	fmt.Fprintf(&t.b, "   %s: %s\n", label, value)
}

func (t *textExplainer) code(label, written, resolved string) {
	fmt.Fprintf(&t.b, "   %s: %s\n", label, indentMore(written, "     "))
	if resolved != "" {
		fmt.Fprintf(&t.b, "   %s  resolved: %s\n", strings.Repeat(" ", len(label)), indentMore(resolved, "     "))
	}
}

func indentMore(s, pad string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

func (t *textExplainer) list(label string, items []item) {
	fmt.Fprintf(&t.b, "   %s:\n", label)
	for _, it := range items {
		fmt.Fprintf(&t.b, "     - %s\n", indentMore(it.text, "       "))
		if it.message != "" {
			fmt.Fprintf(&t.b, "       else: %s\n", it.message)
		}
	}
}

func (t *textExplainer) variable(v varInfo) {
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

func (t *textExplainer) String() string { return t.b.String() }

type markdownExplainer struct {
	b     strings.Builder
	table bool // the variables table has its header
}

func (m *markdownExplainer) title(name, desc, file string) {
	fmt.Fprintf(&m.b, "## Plan `%s`\n\n", name)
	if desc != "" {
		fmt.Fprintf(&m.b, "%s\n\n", desc)
	}
	fmt.Fprintf(&m.b, "File: `%s`\n", file)
}

func (m *markdownExplainer) section(name string) {
	fmt.Fprintf(&m.b, "\n### %s\n", name)
}

func (m *markdownExplainer) step(n int, addr, kind, target, desc string) {
	fmt.Fprintf(&m.b, "\n#### %d. `%s` on `%s`\n\n", n, addr, target)
	if desc != "" {
		fmt.Fprintf(&m.b, "%s\n\n", desc)
	}
}

func (m *markdownExplainer) field(label, value string) {
	fmt.Fprintf(&m.b, "- **%s:** %s\n", strings.TrimSpace(label), value)
}

func (m *markdownExplainer) code(label, written, resolved string) {
	pad := ""
	if strings.HasPrefix(label, " ") {
		pad = "  " // an attribute of the probe or load above
	}
	label = strings.TrimSpace(label)
	if !strings.Contains(written, "\n") && !strings.Contains(resolved, "\n") {
		fmt.Fprintf(&m.b, "%s- **%s:** %s\n", pad, label, mdCode(written))
		if resolved != "" {
			fmt.Fprintf(&m.b, "%s  - resolved: %s\n", pad, mdCode(resolved))
		}
		return
	}
	in := pad + "  "
	fmt.Fprintf(&m.b, "%s- **%s:**\n\n%s```\n%s%s\n%s```\n", pad, label, in, in, indentMore(written, in), in)
	if resolved != "" {
		fmt.Fprintf(&m.b, "\n%sresolved:\n\n%s```\n%s%s\n%s```\n", in, in, in, indentMore(resolved, in), in)
	}
}

func (m *markdownExplainer) list(label string, items []item) {
	fmt.Fprintf(&m.b, "- **%s:**\n", label)
	for _, it := range items {
		text := it.text
		if it.code {
			text = mdCode(strings.Join(strings.Fields(text), " "))
		}
		if it.message != "" {
			fmt.Fprintf(&m.b, "  - %s (else: %s)\n", text, it.message)
		} else {
			fmt.Fprintf(&m.b, "  - %s\n", text)
		}
	}
}

func (m *markdownExplainer) variable(v varInfo) {
	if !m.table {
		m.table = true
		m.b.WriteString("\n| Variable | Type | Value | Description |\n|---|---|---|---|\n")
	}
	value := mdCode(v.value)
	if v.source != "" && v.source != "default" {
		value += " from " + v.source
	}
	parts := []string{}
	if v.desc != "" {
		parts = append(parts, v.desc)
	}
	for _, r := range v.rules {
		parts = append(parts, "must hold: "+mdCode(strings.Join(strings.Fields(r.text), " ")))
	}
	desc := strings.Join(parts, "; ")
	fmt.Fprintf(&m.b, "| `%s` | `%s` | %s | %s |\n", v.name, v.typ, strings.ReplaceAll(value, "|", `\|`), strings.ReplaceAll(desc, "|", `\|`))
}

func (m *markdownExplainer) String() string { return m.b.String() }

// mdCode wraps s in a code span that survives backticks inside it.
func mdCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
