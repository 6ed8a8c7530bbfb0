package plans

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Changes is what a change to a plan changes in what it does and checks,
// compared as a plan and not as text: a reformatted file or a new comment
// changes nothing. Values are shown as written; a sensitive variable's
// default is never shown.
type Changes struct {
	Plan      []Change      `json:"plan,omitempty"` // the plan's name and description
	Steps     []StepChange  `json:"steps,omitempty"`
	Variables []EntryChange `json:"variables,omitempty"`
	Locals    []EntryChange `json:"locals,omitempty"`
	Targets   []EntryChange `json:"targets,omitempty"`
	// SameSource is true when the two files are byte for byte the same.
	SameSource bool `json:"same_source"`
}

// ChangeKind says whether something was added, removed or modified; the
// zero value is unknown.
type ChangeKind int

const (
	_ ChangeKind = iota
	Added
	Removed
	Modified
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Modified:
		return "changed"
	}
	return "unknown"
}

// MarshalText gives the kind as its word, as the JSON of a diff holds it.
func (k ChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Change is one difference in a step, variable, local, target or the
// plan itself.
type Change struct {
	Kind ChangeKind `json:"kind"`
	What string     `json:"what"` // "timeout", "postcondition", `probe "health" url`
	// Of is the condition an error_message belongs to, as written; ""
	// for anything else.
	Of string `json:"of,omitempty"`
	// Old and New are as written, durations with the kind's default
	// written out ("5m (default)"). Old is "" when Added, New when Removed.
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	Code    bool   `json:"code,omitempty"`    // Old and New are source text or values, not prose
	Message string `json:"message,omitempty"` // an added or removed condition's error_message
}

// StepChange is a step added, removed, moved or changed (same KIND.NAME).
type StepChange struct {
	Addr   string     `json:"addr"` // "wait.ready"
	Kind   ChangeKind `json:"kind"`
	OldPos int        `json:"old_position,omitempty"` // 1-based positions in file order; 0 when absent
	NewPos int        `json:"new_position,omitempty"`
	// Moved is true when the step now runs at another point relative to
	// the steps both plans have; After is the step it now follows ("" when
	// it runs first).
	Moved   bool     `json:"moved,omitempty"`
	After   string   `json:"after,omitempty"`
	Changes []Change `json:"changes,omitempty"`
}

// EntryChange is a variable, local or target added, removed or changed.
type EntryChange struct {
	Name    string     `json:"name"`
	Kind    ChangeKind `json:"kind"`
	Changes []Change   `json:"changes,omitempty"`
}

// Empty reports whether nothing that the plan does or checks changed.
func (c *Changes) Empty() bool {
	return len(c.Plan) == 0 && len(c.Steps) == 0 && len(c.Variables) == 0 &&
		len(c.Locals) == 0 && len(c.Targets) == 0
}

// Diff compares two plans, typically the base branch's version of a plan
// and a pull request's. Steps are matched by address (KIND.NAME): a
// renamed step is one removed and one added. The result depends only on
// the two plans.
func Diff(old, new *Plan) Changes {
	d := differ{old: newSide(old), new: newSide(new)}
	c := Changes{SameSource: string(old.Source) == string(new.Source)}
	// A plan without a plan block is named after its file; comparing
	// those names would report the temporary file CI wrote the old one to.
	if old.Name != new.Name && (namedInFile(old) || namedInFile(new)) {
		c.Plan = append(c.Plan, Change{Kind: Modified, What: "name", Old: old.Name, New: new.Name, Code: true})
	}
	c.Plan = append(c.Plan, diffFacts(
		textFacts(fact{key: "description", value: old.Description}),
		textFacts(fact{key: "description", value: new.Description}))...)
	c.Steps = d.steps()
	c.Variables = d.variables()
	c.Locals = d.locals()
	c.Targets = d.targets()
	return c
}

func namedInFile(p *Plan) bool {
	return p.Name != strings.TrimSuffix(filepath.Base(p.Filename), filepath.Ext(p.Filename))
}

// side is one of the two plans with what reading its source needs.
type side struct {
	plan *Plan
	e    *explain
}

func newSide(p *Plan) side {
	return side{plan: p, e: &explain{plan: p, lang: Language()}}
}

// written is an expression as explain shows it: a quoted string without
// its quotes.
func (s side) written(expr hcl.Expression) string {
	if text := s.e.source(expr); text != "" {
		// In the JSON syntax every value is a JSON string or number: show
		// a string without its quotes, as explain does in HCL.
		if strings.HasSuffix(s.plan.Filename, ".json") {
			if u, err := strconv.Unquote(text); err == nil {
				return u
			}
		}
		return text
	}
	if v, ds := expr.Value(nil); !ds.HasErrors() && v.IsWhollyKnown() {
		return valueString(v)
	}
	return ""
}

// key is an expression's tokens without comments and line breaks: two
// expressions with the same key are the same expression.
func (s side) key(expr hcl.Expression) string {
	r := expr.Range()
	src := s.plan.Source
	if r.Filename != s.plan.Filename || r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return s.written(expr)
	}
	return tokenKey(src[r.Start.Byte:r.End.Byte])
}

func tokenKey(src []byte) string {
	toks, diags := hclsyntax.LexExpression(src, "", hcl.InitialPos)
	if diags.HasErrors() {
		return strings.Join(strings.Fields(string(src)), " ")
	}
	var b strings.Builder
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			continue
		}
		b.Write(t.Bytes)
		b.WriteByte(' ')
	}
	return b.String()
}

// fact is one comparable property of a step, variable or target.
type fact struct {
	key   string // what it is: "timeout", `probe "health" url`
	value string // as shown
	cmp   string // what is compared; value when ""
	code  bool
	// dflt marks a value the author did not write (a default): an added
	// step does not list it.
	dflt bool
}

func (f fact) compared() string {
	if f.cmp != "" {
		return f.cmp
	}
	return f.value
}

func textFacts(fs ...fact) []fact {
	var out []fact
	for _, f := range fs {
		if f.value != "" {
			out = append(out, f)
		}
	}
	return out
}

// diffFacts compares two lists of facts by key, in the new list's order
// and then the removed ones in the old list's order.
func diffFacts(old, new []fact) []Change {
	var out []Change
	oldBy := map[string]fact{}
	for _, f := range old {
		oldBy[f.key] = f
	}
	newKeys := map[string]bool{}
	for _, f := range new {
		newKeys[f.key] = true
		o, ok := oldBy[f.key]
		switch {
		case !ok:
			out = append(out, Change{Kind: Added, What: f.key, New: f.value, Code: f.code})
		case o.compared() != f.compared():
			out = append(out, Change{Kind: Modified, What: f.key, Old: o.value, New: f.value, Code: f.code || o.code})
		}
	}
	for _, f := range old {
		if !newKeys[f.key] {
			out = append(out, Change{Kind: Removed, What: f.key, Old: f.value, Code: f.code})
		}
	}
	return out
}

type differ struct{ old, new side }

func (d *differ) steps() []StepChange {
	oldSteps, newSteps := d.old.plan.Steps, d.new.plan.Steps
	oldPos := map[string]int{}
	for i, s := range oldSteps {
		oldPos[s.Addr()] = i + 1
	}
	newPos := map[string]int{}
	for i, s := range newSteps {
		newPos[s.Addr()] = i + 1
	}
	// The steps both plans have, in the new order; those outside the
	// longest run that keeps the old order are the ones that moved.
	var kept []string
	for _, s := range newSteps {
		if oldPos[s.Addr()] > 0 {
			kept = append(kept, s.Addr())
		}
	}
	stay := inOrder(kept, oldPos)

	var out []StepChange
	prev := ""
	for _, s := range newSteps {
		addr := s.Addr()
		sc := StepChange{Addr: addr, NewPos: newPos[addr], OldPos: oldPos[addr]}
		if sc.OldPos == 0 {
			sc.Kind = Added
			facts := d.new.stepFacts(s)
			sc.Changes = dropDefaults(diffFacts(nil, facts), facts)
			sc.Changes = append(sc.Changes, d.probes(nil, s)...)
			sc.Changes = append(sc.Changes, diffConditions("postcondition", d.old, d.new, nil, s.Postconditions)...)
			sc.Changes = append(sc.Changes, diffConditions("abort_if", d.old, d.new, nil, s.AbortIfs)...)
		} else {
			o := oldSteps[sc.OldPos-1]
			sc.Kind = Modified
			sc.Changes = diffFacts(d.old.stepFacts(o), d.new.stepFacts(s))
			sc.Changes = append(sc.Changes, d.probes(o, s)...)
			sc.Changes = append(sc.Changes, diffConditions("postcondition", d.old, d.new, o.Postconditions, s.Postconditions)...)
			sc.Changes = append(sc.Changes, diffConditions("abort_if", d.old, d.new, o.AbortIfs, s.AbortIfs)...)
			sc.Moved = !stay[addr]
			sc.After = prev
		}
		prev = addr
		if sc.Kind == Added || sc.Moved || len(sc.Changes) > 0 {
			out = append(out, sc)
		}
	}
	for _, s := range oldSteps {
		if newPos[s.Addr()] == 0 {
			// What it checked is what a reviewer loses with it.
			sc := StepChange{Addr: s.Addr(), Kind: Removed, OldPos: oldPos[s.Addr()]}
			sc.Changes = append(diffConditions("postcondition", d.old, d.new, s.Postconditions, nil),
				diffConditions("abort_if", d.old, d.new, s.AbortIfs, nil)...)
			out = append(out, sc)
		}
	}
	return out
}

// dropDefaults keeps the changes of facts the author wrote.
func dropDefaults(cs []Change, facts []fact) []Change {
	dflt := map[string]bool{}
	for _, f := range facts {
		dflt[f.key] = f.dflt
	}
	var out []Change
	for _, c := range cs {
		if !dflt[c.What] {
			out = append(out, c)
		}
	}
	return out
}

// inOrder returns the members of the longest subsequence of addrs whose
// old positions increase: the steps that kept their order.
func inOrder(addrs []string, oldPos map[string]int) map[string]bool {
	n := len(addrs)
	length := make([]int, n)
	from := make([]int, n)
	best := -1
	for i := range addrs {
		length[i], from[i] = 1, -1
		for j := 0; j < i; j++ {
			if oldPos[addrs[j]] < oldPos[addrs[i]] && length[j]+1 > length[i] {
				length[i], from[i] = length[j]+1, j
			}
		}
		if best < 0 || length[i] > length[best] {
			best = i
		}
	}
	stay := map[string]bool{}
	for i := best; i >= 0; i = from[i] {
		stay[addrs[i]] = true
	}
	return stay
}

// stepFacts lists what a step does, its conditions and probes aside.
func (s side) stepFacts(st *Step) []fact {
	kind := s.e.lang.StepKind(st.Kind)
	var fs []fact
	fs = append(fs, textFacts(fact{key: "description", value: st.Description})...)
	fs = append(fs, fact{key: "target", value: st.Target, code: true, dflt: st.targetExpr == nil})
	for _, a := range []struct {
		name string
		expr hcl.Expression
	}{{"command", st.Command}, {"log", st.Log}} {
		if a.expr != nil {
			fs = append(fs, s.codeFact(a.name, a.expr))
		}
	}
	if grace, ok := kindDefault(kind, "grace"); ok {
		fs = append(fs, s.durationFact("grace", st.Grace, grace))
	}
	for _, a := range []struct {
		name string
		expr hcl.Expression
	}{{"env", st.Env}, {"workdir", st.Workdir}} {
		if a.expr != nil {
			fs = append(fs, s.codeFact(a.name, a.expr))
		}
	}
	if kind != nil {
		fs = append(fs, s.durationFact("timeout", st.Timeout, kind.DefaultTimeout))
		fs = append(fs, s.durationFact("interval", st.Interval, kind.DefaultInterval))
	}
	fs = append(fs,
		fact{key: "always", value: yesNo(st.Always), dflt: !st.Always},
		fact{key: "keep", value: yesNo(st.Keep), dflt: !st.Keep})
	if st.Progress != nil {
		fs = append(fs, s.codeFact("progress", st.Progress))
	}
	if st.Load != nil {
		fs = append(fs, fact{key: "load", value: st.Load.Kind, code: true})
		for _, name := range s.e.attrOrder(st.Load.Attrs, s.e.loadAttrNames(st.Load.Kind)) {
			fs = append(fs, s.codeFact("load "+name, st.Load.Attrs[name]))
		}
	}
	for _, m := range st.Metrics {
		how := "regex " + quote(m.Regex)
		if m.JSON != "" {
			how = "json " + m.JSON
		}
		fs = append(fs, fact{key: fmt.Sprintf("metric %q", m.Name), value: how, code: true})
	}
	if _, ok := kindDefault(kind, "repeat"); ok {
		fs = append(fs, fact{key: "repeat", value: strconv.Itoa(max(st.Repeat, 1)), code: true, dflt: st.Repeat <= 1})
	}
	return fs
}

// kindDefault is the default of kind's attribute name, and whether the
// kind has it.
func kindDefault(kind *StepKind, name string) (string, bool) {
	if kind == nil {
		return "", false
	}
	d, ok := kind.Defaults[name]
	return d, ok
}

func (s side) codeFact(key string, expr hcl.Expression) fact {
	return fact{key: key, value: s.written(expr), cmp: s.key(expr), code: true}
}

// durationFact shows a duration as written, or its default as
// "5m (default)"; two durations that mean the same time are the same.
func (s side) durationFact(key string, expr hcl.Expression, def string) fact {
	if expr == nil {
		if def == "" {
			return fact{key: key, value: "none (checks once)", cmp: "0s", dflt: true}
		}
		return fact{key: key, value: def + " (default)", cmp: canonDuration(def), code: true, dflt: true}
	}
	f := s.codeFact(key, expr)
	if v, ds := expr.Value(nil); !ds.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		f.cmp = canonDuration(v.AsString())
	}
	return f
}

func canonDuration(s string) string {
	if d, err := time.ParseDuration(s); err == nil {
		return d.String()
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// probes compares two steps' probes by name; o is nil for an added step.
func (d *differ) probes(o, n *Step) []Change {
	var out []Change
	oldBy := map[string]*Probe{}
	if o != nil {
		for _, p := range o.Probes {
			oldBy[p.Name] = p
		}
	}
	seen := map[string]bool{}
	for _, p := range n.Probes {
		seen[p.Name] = true
		what := fmt.Sprintf("probe %q", p.Name)
		op := oldBy[p.Name]
		if op == nil {
			out = append(out, Change{Kind: Added, What: what, New: d.new.probeText(p), Code: true})
			continue
		}
		if op.Kind != p.Kind {
			out = append(out, Change{Kind: Modified, What: what + " kind", Old: op.Kind, New: p.Kind, Code: true})
		}
		out = append(out, diffFacts(d.old.probeFacts(op), d.new.probeFacts(p))...)
	}
	if o != nil {
		for _, p := range o.Probes {
			if !seen[p.Name] {
				out = append(out, Change{Kind: Removed, What: fmt.Sprintf("probe %q", p.Name), Old: d.old.probeText(p), Code: true})
			}
		}
	}
	return out
}

func (s side) probeFacts(p *Probe) []fact {
	prefix := fmt.Sprintf("probe %q ", p.Name)
	var fs []fact
	if p.Step != "" {
		fs = append(fs, fact{key: prefix + "step", value: "step." + p.Step, code: true})
	}
	if p.Since != "" {
		fs = append(fs, fact{key: prefix + "since", value: "step." + p.Since, code: true})
	}
	var names []string
	if k := s.e.lang.ProbeKind(p.Kind); k != nil {
		for _, a := range k.Attrs {
			names = append(names, a.Name)
		}
	}
	for _, name := range s.e.attrOrder(p.Attrs, names) {
		fs = append(fs, s.codeFact(prefix+name, p.Attrs[name]))
	}
	return fs
}

// probeText is a whole probe in one value: "http probe: url = ...",
// its attributes one a line when they do not fit on one.
func (s side) probeText(p *Probe) string {
	var attrs []string
	prefix := fmt.Sprintf("probe %q ", p.Name)
	for _, f := range s.probeFacts(p) {
		attrs = append(attrs, strings.TrimPrefix(f.key, prefix)+" = "+f.value)
	}
	head := p.Kind + " probe"
	if len(attrs) == 0 {
		return head
	}
	line := head + ": " + strings.Join(attrs, ", ")
	if len(line) <= 100 && !strings.Contains(line, "\n") {
		return line
	}
	for i, a := range attrs {
		attrs[i] = "  " + indentMore(a, "  ")
	}
	return head + ":\n" + strings.Join(attrs, "\n")
}

// diffConditions compares two lists of conditions by source text. A
// condition kept as written can still have a new error_message; one
// removed and one added with the same error_message (or at the same
// place among the leftovers) read as one changed.
func diffConditions(what string, os, ns side, old, new []*Condition) []Change {
	type cond struct {
		src, key, msg, msgKey string
	}
	read := func(s side, cs []*Condition) []cond {
		var out []cond
		for _, c := range cs {
			x := cond{src: c.Source, key: tokenKey([]byte(c.Source))}
			if c.ErrorMessage != nil {
				x.msg, x.msgKey = s.written(c.ErrorMessage), s.key(c.ErrorMessage)
			}
			out = append(out, x)
		}
		return out
	}
	oc, nc := read(os, old), read(ns, new)
	pair := make([]int, len(nc)) // index into oc + 1; 0 when unpaired
	used := make([]bool, len(oc))
	match := func(same func(o, n cond) bool) {
		for i, n := range nc {
			if pair[i] > 0 {
				continue
			}
			for j, o := range oc {
				if !used[j] && same(o, n) {
					pair[i], used[j] = j+1, true
					break
				}
			}
		}
	}
	match(func(o, n cond) bool { return o.key == n.key })
	match(func(o, n cond) bool { return o.msgKey != "" && o.msgKey == n.msgKey })
	match(func(o, n cond) bool { return true })

	var out []Change
	for i, n := range nc {
		if pair[i] == 0 {
			out = append(out, Change{Kind: Added, What: what, New: n.src, Code: true, Message: n.msg})
			continue
		}
		o := oc[pair[i]-1]
		if o.key != n.key {
			out = append(out, Change{Kind: Modified, What: what, Old: o.src, New: n.src, Code: true})
		}
		if o.msgKey != n.msgKey {
			c := Change{What: "error_message", Of: n.src, Old: o.msg, New: n.msg}
			switch {
			case o.msg == "":
				c.Kind = Added
			case n.msg == "":
				c.Kind = Removed
			default:
				c.Kind = Modified
			}
			out = append(out, c)
		}
	}
	for j, o := range oc {
		if !used[j] {
			out = append(out, Change{Kind: Removed, What: what, Old: o.src, Code: true, Message: o.msg})
		}
	}
	return out
}

func (d *differ) variables() []EntryChange {
	var out []EntryChange
	for _, v := range d.new.plan.Variables {
		ov := d.old.plan.Variable(v.Name)
		if ov == nil {
			out = append(out, EntryChange{Name: v.Name, Kind: Added, Changes: append(
				dropDefaults(diffFacts(nil, variableFacts(v, v.Sensitive)), variableFacts(v, v.Sensitive)),
				diffConditions("validation", d.old, d.new, nil, v.Validations)...)})
			continue
		}
		hide := v.Sensitive || ov.Sensitive
		cs := diffFacts(variableFacts(ov, hide), variableFacts(v, hide))
		cs = append(cs, diffConditions("validation", d.old, d.new, ov.Validations, v.Validations)...)
		if len(cs) > 0 {
			out = append(out, EntryChange{Name: v.Name, Kind: Modified, Changes: cs})
		}
	}
	for _, v := range d.old.plan.Variables {
		if d.new.plan.Variable(v.Name) == nil {
			out = append(out, EntryChange{Name: v.Name, Kind: Removed})
		}
	}
	return out
}

// variableFacts lists a variable's type, default and flags; hide shows
// the default as (sensitive) while still comparing it.
func variableFacts(v *Variable, hide bool) []fact {
	def := fact{key: "default", value: "(none: required)", code: false}
	if v.Default != cty.NilVal {
		shown := showValue(v.Default)
		def = fact{key: "default", value: shown, code: true}
		if hide {
			def = fact{key: "default", value: "(sensitive)", cmp: shown}
		}
	}
	fs := []fact{
		{key: "type", value: typeexpr.TypeString(v.Type), code: true, dflt: v.Type == cty.DynamicPseudoType},
		def,
		{key: "sensitive", value: yesNo(v.Sensitive), dflt: !v.Sensitive},
	}
	return append(fs, textFacts(fact{key: "description", value: v.Description})...)
}

func (d *differ) locals() []EntryChange {
	find := func(p *Plan, name string) *Local {
		for _, l := range p.Locals {
			if l.Name == name {
				return l
			}
		}
		return nil
	}
	var out []EntryChange
	for _, l := range d.new.plan.Locals {
		nf := []fact{d.new.codeFact("value", l.Expr)}
		if ol := find(d.old.plan, l.Name); ol == nil {
			out = append(out, EntryChange{Name: l.Name, Kind: Added, Changes: diffFacts(nil, nf)})
		} else if cs := diffFacts([]fact{d.old.codeFact("value", ol.Expr)}, nf); len(cs) > 0 {
			out = append(out, EntryChange{Name: l.Name, Kind: Modified, Changes: cs})
		}
	}
	for _, l := range d.old.plan.Locals {
		if find(d.new.plan, l.Name) == nil {
			out = append(out, EntryChange{Name: l.Name, Kind: Removed})
		}
	}
	return out
}

func (d *differ) targets() []EntryChange {
	var out []EntryChange
	for _, t := range d.new.plan.Targets {
		ot := d.old.plan.Target(t.Name)
		if ot == nil {
			facts := d.new.targetFacts(t)
			out = append(out, EntryChange{Name: t.Name, Kind: Added, Changes: dropDefaults(diffFacts(nil, facts), facts)})
		} else if cs := diffFacts(d.old.targetFacts(ot), d.new.targetFacts(t)); len(cs) > 0 {
			out = append(out, EntryChange{Name: t.Name, Kind: Modified, Changes: cs})
		}
	}
	for _, t := range d.old.plan.Targets {
		if d.new.plan.Target(t.Name) == nil {
			out = append(out, EntryChange{Name: t.Name, Kind: Removed})
		}
	}
	return out
}

func (s side) targetFacts(t *Target) []fact {
	var fs []fact
	if t.SSH == nil {
		fs = append(fs, fact{key: "connects", value: "local", dflt: true})
	} else {
		fs = append(fs, fact{key: "connects", value: "ssh", dflt: true})
		for _, a := range []struct {
			name string
			expr hcl.Expression
		}{
			{"host", t.SSH.Host}, {"user", t.SSH.User}, {"port", t.SSH.Port},
			{"identity_file", t.SSH.IdentityFile}, {"known_hosts", t.SSH.KnownHosts},
			{"proxy_jump", t.SSH.ProxyJump}, {"passphrase_env", t.SSH.PassphraseEnv},
			{"insecure_ignore_host_key", t.SSH.InsecureIgnoreHostKey},
			{"connect_timeout", t.SSH.ConnectTimeout},
			{"hosts", t.SSH.Hosts}, {"config_file", t.SSH.ConfigFile},
		} {
			if a.expr != nil {
				fs = append(fs, s.codeFact("ssh "+a.name, a.expr))
			}
		}
	}
	if t.Env != nil {
		fs = append(fs, s.codeFact("env", t.Env))
	}
	if t.Workdir != nil {
		fs = append(fs, s.codeFact("workdir", t.Workdir))
	}
	return fs
}
