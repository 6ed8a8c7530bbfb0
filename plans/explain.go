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

// Explanation is what explain says of a plan, in words: each step in
// file order with what it does and what it must observe to move on, then
// the variables. It holds text only, sensitive values already shown as
// (sensitive); views renders it.
type Explanation struct {
	Plan        string            `json:"plan"`
	Description string            `json:"description,omitempty"`
	File        string            `json:"file"`
	Steps       []StepExplanation `json:"steps"`
	// Part says what a run of part of the plan (--from, --only) does.
	Part      string                `json:"part,omitempty"`
	Variables []VariableExplanation `json:"variables,omitempty"`
}

// StepExplanation is one step: where it runs, then its facts in order.
type StepExplanation struct {
	Number      int    `json:"number"` // 1-based, in file order
	Addr        string `json:"addr"`
	Kind        string `json:"kind"`
	Target      string `json:"target"` // "gpu (ssh root@gpu-node-1)"
	Description string `json:"description,omitempty"`
	Facts       []Fact `json:"facts,omitempty"`
}

// Fact is one thing explain says of a step: words (Value), an expression
// (Code: Value as written, Resolved its value when known before the run),
// or a list of conditions (Items, not nil).
type Fact struct {
	Label string `json:"label"`
	// Attr: an attribute of the probe or load in the fact above.
	Attr     bool   `json:"attr,omitempty"`
	Value    string `json:"value,omitempty"`
	Code     bool   `json:"code,omitempty"`
	Resolved string `json:"resolved,omitempty"`
	Items    []Item `json:"items,omitempty"`
}

// Item is a condition (Code: its source) or words, with its
// error_message.
type Item struct {
	Text    string `json:"text"`
	Code    bool   `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// VariableExplanation is a variable: its type, the value it has (from
// Source: "default", a -var, a file) or "(required: no default)", and the
// rules its validations check.
type VariableExplanation struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Value       string `json:"value"`
	Source      string `json:"source,omitempty"`
	Description string `json:"description,omitempty"`
	Rules       []Item `json:"rules,omitempty"`
}

// Explain says in words what each step of p does and what it must
// observe to move on, in file order, followed by the variables. With a
// Scope, commands and other values are also given resolved (sensitive
// parts as (sensitive)); with a nil Scope they are given as written. The
// result depends only on its inputs.
func Explain(p *Plan, s *Scope) Explanation {
	e := &explain{plan: p, scope: s, lang: Language()}
	x := Explanation{Plan: p.Name, Description: p.Description, File: p.Filename, Steps: []StepExplanation{}}
	for i, st := range p.Steps {
		x.Steps = append(x.Steps, e.step(i+1, st))
	}
	for _, v := range p.Variables {
		x.Variables = append(x.Variables, e.variable(v))
	}
	return x
}

type explain struct {
	plan  *Plan
	scope *Scope
	lang  *Schema
	facts []Fact // of the step being explained
}

func (e *explain) field(label, value string) {
	e.facts = append(e.facts, Fact{Label: label, Value: value})
}

func (e *explain) list(label string, items []Item) {
	e.facts = append(e.facts, Fact{Label: label, Items: items})
}

func (e *explain) step(n int, s *Step) StepExplanation {
	kind := e.lang.StepKind(s.Kind)
	x := StepExplanation{Number: n, Addr: s.Addr(), Kind: s.Kind, Target: e.targetText(s.Target), Description: s.Description}
	if kind == nil {
		return x
	}
	e.facts = nil
	// The action, as the kind words it (steps.Kind.Explain).
	say := kind.Kind.Explain
	if say.NoAction != "" {
		e.field("Action", say.NoAction)
	}
	if s.Load != nil {
		head := s.Load.Kind + " load"
		if sum := e.lang.LoadSummary(s.Load, e.scope); sum != "" {
			head += " (" + sum + ")"
		}
		e.field("Load", head)
		for _, name := range e.attrOrder(s.Load.Attrs, e.loadAttrNames(s.Load.Kind)) {
			e.attr(name, s.Load.Attrs[name])
		}
	}
	if s.Command != nil && say.Command != "" {
		e.code(say.Command, s.Command)
	}
	for _, a := range say.Attrs {
		if expr, ok := s.Attrs[a.Name]; ok {
			e.code(a.Label, expr)
		} else if a.Absent != "" {
			e.field(a.Label, a.Absent)
		}
	}
	if s.Command != nil {
		for _, m := range s.Metrics {
			how := "regex " + quote(m.Regex)
			if m.JSON != "" {
				how = "json path " + m.JSON
			}
			e.field("Metric "+m.Name, how)
		}
	}
	if s.Repeat > 1 {
		e.field("Repeats", fmt.Sprintf("%d times (metrics give values, median, min, max, stddev)", s.Repeat))
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

	var moves []Item
	// What the kind checks of this step (a benchmark: its load, or its
	// command).
	for _, c := range kind.Kind.Defaults().ConfirmsFor(s.Shape()) {
		if grace, ok := kind.Defaults["grace"]; ok && strings.Contains(c, "grace") {
			c += ": " + e.durationText(s.Grace, grace)
		}
		moves = append(moves, Item{Text: c})
	}
	for _, c := range s.Postconditions {
		moves = append(moves, e.condition(c))
	}
	if len(moves) == 0 {
		moves = append(moves, Item{Text: "nothing: it has no postcondition"})
	}
	e.list("Moves on when", moves)
	if len(s.AbortIfs) > 0 {
		var stops []Item
		for _, c := range s.AbortIfs {
			stops = append(stops, e.condition(c))
		}
		e.list("Stops at once if", stops)
	}
	if kind.DefaultTimeout == "" && s.Timeout == nil {
		e.field("Gives up", "at once: checks a single time (set timeout to retry)")
	} else {
		e.field("Gives up after", e.durationText(s.Timeout, kind.DefaultTimeout))
		e.field("Checks every", e.durationText(s.Interval, kind.DefaultInterval))
	}
	if s.Progress != nil {
		e.code("Progress", s.Progress)
	}
	if s.Always {
		e.field("Always runs", "yes, even after an earlier step failed")
	} else {
		e.field("Always runs", "no: skipped once a step has failed")
	}
	if s.Keep {
		e.field("Keeps", "what it launched running after the plan ends")
	}
	x.Facts = e.facts
	return x
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
	e.field(fmt.Sprintf("Probe %q", pr.Name), head)
	var names []string
	if k := e.lang.ProbeKind(pr.Kind); k != nil {
		for _, a := range k.Attrs {
			names = append(names, a.Name)
		}
	}
	for _, name := range e.attrOrder(pr.Attrs, names) {
		e.attr(name, pr.Attrs[name])
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

func (e *explain) condition(c *Condition) Item {
	it := Item{Text: c.Source, Code: true}
	if c.ErrorMessage != nil {
		written, resolved := e.texts(c.ErrorMessage)
		if resolved != "" {
			it.Message = resolved
		} else if v, ds := c.ErrorMessage.Value(nil); !ds.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			it.Message = v.AsString()
		} else {
			it.Message = written
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
	e.facts = append(e.facts, e.codeFact(label, expr))
}

// attr is an attribute of the probe or load just explained.
func (e *explain) attr(label string, expr hcl.Expression) {
	f := e.codeFact(label, expr)
	f.Attr = true
	e.facts = append(e.facts, f)
}

func (e *explain) codeFact(label string, expr hcl.Expression) Fact {
	written, resolved := e.texts(expr)
	if resolved == written {
		resolved = ""
	}
	return Fact{Label: label, Value: written, Code: true, Resolved: resolved}
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

func (e *explain) variable(v *Variable) VariableExplanation {
	info := VariableExplanation{Name: v.Name, Description: v.Description, Type: typeexpr.TypeString(v.Type)}
	switch {
	case e.scope != nil && e.scope.Vars[v.Name] != cty.NilVal:
		info.Value = showValue(e.scope.Vars[v.Name])
		info.Source = e.scope.Sources[v.Name]
	case v.Default == cty.NilVal:
		info.Value = "(required: no default)"
	case v.Sensitive:
		info.Value = "(sensitive)"
		info.Source = "default"
	default:
		info.Value = showValue(v.Default)
		info.Source = "default"
	}
	if v.Sensitive && info.Value != "(required: no default)" {
		info.Value = "(sensitive)"
	}
	for _, c := range v.Validations {
		info.Rules = append(info.Rules, e.condition(c))
	}
	return info
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// indentMore puts pad before the second and later lines of s.
func indentMore(s, pad string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
