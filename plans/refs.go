package plans

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
)

// Ref is one reference an expression makes, as Parse found it: which root
// it starts from and what it names there. Parse analyses every expression
// of the plan once (analyse); the runner reads what a step, a condition or
// a probe reads from these, never from the expressions again.
//
// What a reference names is the same for every reference of its text,
// and a plan repeats the same few thousands of times: the names are
// shared (refNames, read only) and each Ref is their pointer and its own
// traversal, 32 bytes where the names copied were 88.
type Ref struct {
	*refNames
	Traversal hcl.Traversal
}

// refNames is what a reference names, the same for each of its text.
type refNames struct {
	// Root is "var", "local", "target", "step", "self" or "probe" (or
	// what an invalid plan wrote instead).
	Root string
	// Name is what the root names: the variable, local, target or probe;
	// for step the address ("run.build"), for self the attribute
	// ("exit_code"); "" when the reference stops at the root.
	Name string
	// Attr is the attribute read of Name: a probe's or a step's output,
	// for self the one after the attribute (self.metrics.rps: "rps"); ""
	// when Name is read whole (probe.api, probe.api["status"]).
	Attr string
	// Text is the reference as evidence shows it: probe.api.json["id"].
	Text string
}

// Refs is what one expression (or a group of them) reads, each reference
// once by its Text, in source order.
type Refs []Ref

// refsOf analyses e: the one walk of its traversals.
func RefsOf(e hcl.Expression) Refs {
	if e == nil {
		return nil
	}
	trs := e.Variables()
	if len(trs) == 0 {
		return nil
	}
	out := make(Refs, 0, len(trs))
	for _, tr := range trs {
		out = out.add(refOf(tr))
	}
	return out
}

func refOf(tr hcl.Traversal) Ref {
	r := &refNames{Root: tr.RootName(), Text: traversalText(tr)}
	at := func(i int) string { s, _ := attrAt(tr, i); return s }
	switch r.Root {
	case "step":
		if kind, name := at(1), at(2); kind != "" && name != "" {
			r.Name, r.Attr = kind+"."+name, at(3)
		}
	default:
		r.Name, r.Attr = at(1), at(2)
	}
	return Ref{refNames: r, Traversal: tr}
}

// traversalText writes a traversal as evidence names it: attributes with
// dots, index keys as literals (strings quoted), splats as [*].
func traversalText(tr hcl.Traversal) string {
	var b strings.Builder
	n := 0
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			n += len(s.Name)
		case hcl.TraverseAttr:
			n += 1 + len(s.Name)
		default:
			n += 8
		}
	}
	b.Grow(n)
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[" + keyText(s.Key) + "]")
		case hcl.TraverseSplat:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

func keyText(k cty.Value) string {
	switch {
	case !k.IsKnown() || k.IsNull():
		return "?"
	case k.Type() == cty.String:
		return fmt.Sprintf("%q", k.AsString())
	case k.Type() == cty.Number:
		return k.AsBigFloat().Text('g', 10)
	}
	return k.GoString()
}

// add returns rs with r, unless a reference of the same text is there.
func (rs Refs) add(r Ref) Refs {
	// The same text shares its names (analysis.ref): most are found by
	// the pointer.
	if slices.ContainsFunc(rs, func(o Ref) bool { return o.refNames == r.refNames || o.Text == r.Text }) {
		return rs
	}
	return append(rs, r)
}

// union returns rs with every reference of more that it lacks.
func (rs Refs) union(more Refs) Refs {
	for _, r := range more {
		rs = rs.add(r)
	}
	return rs
}

// Reads reports whether any reference starts from root ("self").
func (rs Refs) Reads(root string) bool {
	return slices.ContainsFunc(rs, func(r Ref) bool { return r.Root == root })
}

// ReadsSelf reports whether any reference reads self.ATTR.
func (rs Refs) ReadsSelf(attr string) bool {
	return slices.ContainsFunc(rs, func(r Ref) bool { return r.Root == "self" && r.Name == attr })
}

// Probes are the names of the probes read, each once, in order.
func (rs Refs) Probes() []string { return rs.names("probe") }

// Steps are the addresses of the earlier steps read ("run.build"), each
// once, in order.
func (rs Refs) Steps() []string { return rs.names("step") }

func (rs Refs) names(root string) []string {
	var out []string
	for _, r := range rs {
		if r.Root == root && r.Name != "" && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// analysis is what Parse learned of the plan's expressions: each one's
// references and function calls, for the checks. Each native-syntax
// expression is walked once (exprScan) and each distinct reference text
// read once.
type analysis struct {
	// roots is what the parse's walk scanned (nil when it did not): each
	// attribute's expression, found by its identity (byExpr: an
	// interface's words are hashed and compared, the expression is not
	// read), its references, calls and text. The few others are in
	// native.
	roots  *fileScan
	byExpr map[hclsyntax.Expression]int32     // index in roots.roots
	native map[hclsyntax.Expression]exprFacts // by identity (each is a pointer)
	json   map[hcl.Range]exprFacts            // by range: no two expressions analysed share one
	scan   exprScan
	// refs holds the references read so far by their source text: a plan
	// repeats the same few many times, and the same text makes the same
	// reference, its place aside.
	refs   map[string]*refNames
	source func(hcl.Range) []byte // the plan's text at a range, nil when elsewhere

	checked []Refs // analysis.step's, for each step in turn
}

// exprFacts is what one expression reads and calls; calls is nil for an
// expression in JSON syntax, whose evaluation reports unknown functions.
// text is its source text where the parse's walk recorded it (root), so
// that the check finds its value by text (checker.value) without
// reading the expression again; nil elsewhere.
type exprFacts struct {
	refs  Refs
	calls []*hclsyntax.FunctionCallExpr
	text  []byte
}

// of returns what e reads and calls, analysing it now if it was not (a
// target's attributes).
func (a *analysis) of(e hcl.Expression) exprFacts {
	var f exprFacts
	var ok bool
	if se, native := e.(hclsyntax.Expression); native {
		if f, ok = a.root(se); !ok {
			f, ok = a.native[se]
		}
	} else {
		f, ok = a.json[e.Range()]
	}
	if ok {
		return f
	}
	return a.facts(e)
}

// facts analyses e: the one walk of its syntax tree, or of its
// traversals in JSON syntax.
func (a *analysis) facts(e hcl.Expression) exprFacts {
	se, ok := e.(hclsyntax.Expression)
	if !ok {
		return exprFacts{refs: RefsOf(e)}
	}
	s := a.scan.scan(se)
	var f exprFacts
	if len(s.calls) > 0 {
		f.calls = slices.Clone(s.calls)
	}
	if len(s.vars) > 0 {
		f.refs = make(Refs, 0, len(s.vars))
		for _, tr := range s.vars {
			f.refs = f.refs.add(a.ref(tr))
		}
	}
	return f
}

// ref is refOf(tr), its names shared with every reference of the same
// source text.
func (a *analysis) ref(tr hcl.Traversal) Ref {
	if a.source == nil {
		return refOf(tr)
	}
	return sharedRef(tr, a.source(tr.SourceRange()), a.refs)
}

// sharedRef is refOf(tr), its names those of names[text] when text (tr's
// source text) was read before, and kept there when not.
func sharedRef(tr hcl.Traversal, text []byte, names map[string]*refNames) Ref {
	if len(text) == 0 {
		return refOf(tr)
	}
	if n, ok := names[string(text)]; ok {
		return Ref{refNames: n, Traversal: tr}
	}
	r := refOf(tr)
	names[string(text)] = r.refNames
	return r
}

func (a *analysis) expr(e hcl.Expression) Refs {
	if e == nil {
		return nil
	}
	se, native := e.(hclsyntax.Expression)
	if native {
		if f, ok := a.root(se); ok {
			return f.refs // scanned by the parse (scanned)
		}
		if f, ok := a.native[se]; ok {
			return f.refs
		}
	}
	f := a.facts(e)
	if native {
		if a.native == nil {
			a.native = map[hclsyntax.Expression]exprFacts{}
		}
		a.native[se] = f
	} else {
		a.json[e.Range()] = f
	}
	return f.refs
}

func (a *analysis) attrs(m map[string]hcl.Expression) map[string]Refs {
	out := make(map[string]Refs, len(m))
	for name, e := range m {
		out[name] = a.expr(e)
	}
	return out
}

func (a *analysis) condition(c *Condition) {
	c.Refs, c.MessageRefs = a.expr(c.Condition), a.expr(c.ErrorMessage)
}

// analyse fills in what every expression of p reads: the Refs of each
// local, condition, step attribute, probe and load, each step's Reads
// (everything it reads) and each probe's Reads (the outputs its step
// reads of it).
func analyse(p *Plan, source func(hcl.Range) []byte, roots *fileScan) *analysis {
	// Sized for the plan: a map grown one insertion at a time copies
	// itself again and again.
	n := 2 * len(p.Locals)
	for _, s := range p.Steps {
		n += len(s.Attrs) + 2*(len(s.Postconditions)+len(s.AbortIfs))
		for _, pr := range s.Probes {
			n += len(pr.Attrs)
		}
		if s.Load != nil {
			n += len(s.Load.Attrs)
		}
	}
	if roots != nil {
		n = max(n, len(roots.roots))
	}
	a := &analysis{json: map[hcl.Range]exprFacts{}, refs: map[string]*refNames{}, source: source}
	if roots != nil {
		a.scanned(roots)
	} else {
		a.native = make(map[hclsyntax.Expression]exprFacts, n)
	}
	for _, v := range p.Variables {
		for _, c := range v.Validations {
			a.condition(c)
		}
	}
	for _, l := range p.Locals {
		l.Refs = a.expr(l.Expr)
	}
	for _, s := range p.Steps {
		a.step(s)
	}
	return a
}

// scanned reads the references of each expression the parse's walk
// scanned (parseScanned), made there; references read later share their
// names.
func (a *analysis) scanned(f *fileScan) {
	a.roots, a.byExpr, a.refs = f, make(map[hclsyntax.Expression]int32, len(f.roots)), f.names
	for i, r := range f.roots {
		a.byExpr[r.expr] = int32(i)
	}
}

// root is what the parse's walk found in e, if e is an expression it
// scanned.
func (a *analysis) root(e hclsyntax.Expression) (exprFacts, bool) {
	if a.roots == nil {
		return exprFacts{}, false
	}
	i, ok := a.byExpr[e]
	if !ok {
		return exprFacts{}, false
	}
	r := a.roots.roots[i]
	return exprFacts{refs: a.roots.rootRefs(r), calls: a.roots.rootCalls(r), text: a.roots.rootText(r)}, true
}

func (a *analysis) step(s *Step) {
	// Each expression first, so that what gathers them is made once.
	s.AttrRefs = make(map[string]Refs, len(s.Attrs))
	n := 0
	// Every attribute the step sets, whatever its kind (the constants
	// read nothing; the target is a reference of its own).
	for _, name := range attrNames(s.Attrs, &s.names) {
		if name != "target" {
			s.AttrRefs[name] = a.expr(s.Attrs[name])
			n += len(s.AttrRefs[name])
		}
	}
	for _, p := range s.Probes {
		p.AttrRefs = a.attrs(p.Attrs)
		for _, rs := range p.AttrRefs {
			n += len(rs)
		}
	}
	nChecked := len(s.AttrRefs["progress"])
	for _, cs := range [][]*Condition{s.Postconditions, s.AbortIfs} {
		for _, c := range cs {
			a.condition(c)
			nChecked += len(c.Refs) + len(c.MessageRefs)
		}
	}
	if s.Load != nil {
		s.Load.AttrRefs = a.attrs(s.Load.Attrs)
		for _, rs := range s.Load.AttrRefs {
			n += len(rs)
		}
	}

	var all Refs
	if n+nChecked > 0 {
		all = make(Refs, 0, n+nChecked)
	}
	for _, name := range s.names {
		if name != "target" {
			all = all.union(s.AttrRefs[name])
		}
	}
	for _, p := range s.Probes {
		for _, name := range attrNames(p.Attrs, &p.names) { // in order: Reads is the same each time
			all = all.union(p.AttrRefs[name])
		}
	}
	// What the conditions and progress read (the checked references),
	// in their order: of the probes, each gathers only that. The list is
	// the analysis's, kept for the next step: probeReads keeps none of it.
	checked := append(a.checked[:0], s.AttrRefs["progress"])
	for _, cs := range [][]*Condition{s.Postconditions, s.AbortIfs} {
		for _, c := range cs {
			checked = append(checked, c.Refs, c.MessageRefs)
		}
	}
	for _, rs := range checked {
		all = all.union(rs)
	}
	if s.Load != nil {
		for _, name := range attrNames(s.Load.Attrs, &s.Load.names) {
			all = all.union(s.Load.AttrRefs[name])
		}
	}
	s.Reads = all
	for _, p := range s.Probes {
		p.Reads = probeReads(p.Name, checked)
	}
	clear(checked) // it held the step's references: none is kept past it
	a.checked = checked
}

// probeReads is the outputs of probe name the checked references read,
// nil when one reads it whole. A reference repeated sets the same output
// again: the checked references need not be made one list first.
func probeReads(name string, checked []Refs) map[string]bool {
	reads := map[string]bool{}
	for _, rs := range checked {
		for _, r := range rs {
			if r.Root != "probe" || r.Name != name {
				continue
			}
			if r.Attr == "" {
				return nil // read whole
			}
			reads[r.Attr] = true
		}
	}
	return reads
}

func attrAt(tr hcl.Traversal, i int) (string, bool) {
	if len(tr) <= i {
		return "", false
	}
	a, ok := tr[i].(hcl.TraverseAttr)
	return a.Name, ok
}

func (c *checker) ref(tr hcl.Traversal, ctx refContext, stepIdx int) *hcl.Diagnostic {
	// Its names are shared by its source text as the analysis's are: a
	// probe's step = step.launch.NAME, or a splat's traversal made whole
	// (splatRefs), which no traversal the parse made can share.
	return c.refFrom(c.analysis.ref(tr), ctx, stepIdx)
}

// refFrom is ref of a reference made: what it names is read from its
// names (refOf's, from the same traversal), not from the traversal,
// whose steps past the first and the last have not been read since the
// parse.
func (c *checker) refFrom(r Ref, ctx refContext, stepIdx int) *hcl.Diagnostic {
	root, tr := r.Root, r.Traversal
	errd := func(summary, detail string) *hcl.Diagnostic {
		// The range is found only for a diagnostic: most references are
		// fine, and one kept for the closure would be allocated each time.
		rng := tr.SourceRange()
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
	}
	var step *Step
	if stepIdx >= 0 {
		step = c.plan.Steps[stepIdx]
	}
	switch root {
	case "var":
		name := r.Name
		if name == "" {
			return errd("Invalid reference", "Write var.NAME to refer to a variable.")
		}
		if c.vars[name] == nil {
			return errd("Reference to undeclared input variable",
				fmt.Sprintf("There is no variable named %q.%s Declare it with a variable %q block, or fix the name.", name, didYouMean(name, keys(c.vars)), name))
		}
	case "local":
		name := r.Name
		if name == "" {
			return errd("Invalid reference", "Write local.NAME to refer to a local value.")
		}
		if ctx == ctxValidation {
			return errd("Invalid reference in validation", "A validation checks the variable's value alone: it can refer to var.NAME, not to locals.")
		}
		if c.locals[name] == nil {
			return errd("Reference to undeclared local value",
				fmt.Sprintf("There is no local named %q.%s Define it in a locals block, or fix the name.", name, didYouMean(name, keys(c.locals))))
		}
	case "target":
		name := r.Name
		if name == "" {
			return errd("Invalid reference", "Write target.NAME to refer to a target.")
		}
		if ctx < ctxAction {
			return errd("Invalid reference", "target.NAME can be used in steps only.")
		}
		if slices.Contains(FleetAttrs, name) {
			return c.fleetAttrRef(name, step, errd)
		}
		if c.targets[name] == nil {
			return errd("Reference to undeclared target",
				fmt.Sprintf("There is no target named %q.%s Declare it with a target %q block, or fix the name.", name, didYouMean(name, keys(c.targets)), name))
		}
	case "step":
		if ctx < ctxAction {
			return errd("Invalid reference", "step outputs exist only while the plan runs; variables, locals and targets cannot use them.")
		}
		// Name is KIND.NAME when both are attributes (refOf); a kind
		// is a name, without a dot.
		kind, name, ok := strings.Cut(r.Name, ".")
		if !ok {
			return errd("Invalid reference", "Write step.KIND.NAME.ATTR to refer to an earlier step's outputs, e.g. step.run.build.stdout.")
		}
		k := c.lang.StepKind(kind)
		if k == nil {
			return errd("Invalid reference", fmt.Sprintf("There is no step kind %q.%s Write step.KIND.NAME.ATTR.", kind, didYouMean(kind, c.stepKindNames())))
		}
		idx, ok := c.steps[[2]string{kind, name}]
		if !ok {
			var same []string
			for _, s := range c.plan.Steps {
				if s.Kind == kind {
					same = append(same, s.Name)
				}
			}
			return errd("Reference to undeclared step",
				fmt.Sprintf("There is no %s step named %q.%s", kind, name, didYouMean(name, same)))
		}
		addr := kind + "." + name
		if idx == stepIdx {
			return errd("Reference to this step through step",
				fmt.Sprintf("step.%s is the step being checked. Refer to its own outputs with self.ATTR.", addr))
		}
		if idx > stepIdx {
			return errd("Reference to a later step",
				fmt.Sprintf("step.%s is declared at %s, after this step; steps run in file order, so its outputs do not exist yet. Move that step before this one.", addr, where(c.plan.Steps[idx].DeclRange)))
		}
		if c.targets[c.plan.Steps[idx].Target].Fleet() {
			return c.fleetStepRef(tr, addr, errd)
		}
		if attr := r.Attr; attr != "" && k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(kind)+" "+kind+" step", attr, k.Self))
		} else if attr == "metrics" {
			return c.metricRef(tr, 4, c.plan.Steps[idx], "step."+addr, false, errd)
		} else if i, ok := levelMetricsOf(attr, tr, 3); ok {
			return c.metricRef(tr, i, c.plan.Steps[idx], "step."+addr, true, errd)
		}
	case "self":
		if step == nil {
			return errd("Invalid reference", "self is a step's own observed state; use it inside a step.")
		}
		k := c.lang.StepKind(step.Kind)
		if k == nil {
			return nil // the unknown kind is reported already
		}
		if len(k.Self) == 0 {
			return errd("Invalid reference",
				fmt.Sprintf("%s %s step takes no action, so it has no self outputs. Observe state with a probe block and refer to probe.NAME.ATTR.", article(step.Kind), step.Kind))
		}
		attr := r.Name
		if attr == "" {
			return errd("Invalid reference", "Write self.ATTR, e.g. self.exit_code.")
		}
		if ctx < ctxProbe {
			return errd("Invalid reference",
				fmt.Sprintf("self.%s is this step's observed state, known only after its action ran. Use self in postcondition, abort_if, progress or a probe.", attr))
		}
		if k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(step.Kind)+" "+step.Kind+" step", attr, k.Self))
		}
		if attr == "metrics" {
			return c.metricRef(tr, 2, step, "self", false, errd)
		}
		if i, ok := levelMetricsOf(attr, tr, 1); ok {
			return c.metricRef(tr, i, step, "self", true, errd)
		}
	case "probe":
		name := r.Name
		if name == "" {
			return errd("Invalid reference", "Write probe.NAME.ATTR, e.g. probe.health.status.")
		}
		if ctx != ctxCheck {
			where := "here"
			if step == nil {
				where = "outside a step"
			}
			return errd("Invalid reference",
				fmt.Sprintf("probe.%s cannot be used %s: probes are observed while the step checks its conditions. Use them in postcondition, abort_if or progress.", name, where))
		}
		var probe *Probe
		var names []string
		for _, p := range step.Probes {
			names = append(names, p.Name)
			if p.Name == name {
				probe = p
			}
		}
		if probe == nil {
			return errd("Reference to undeclared probe",
				fmt.Sprintf("This step has no probe named %q.%s Add a probe \"KIND\" %q block to this step; probes belong to the step that uses them.", name, didYouMean(name, names), name))
		}
		k := c.lang.ProbeKind(probe.Kind)
		if k == nil {
			return nil
		}
		if attr := r.Attr; attr != "" && k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(probe.Kind)+" "+probe.Kind+" probe", attr, k.Outputs))
		}
	default:
		return errd("Unknown variable",
			fmt.Sprintf("There is no variable named %q.%s References start with var., local., step., probe., self. or target.", root, didYouMean(root, refRoots)))
	}
	return nil
}

// levelMetricsOf finds where tr names a level's metric, tr[at] being the
// step's attribute, named attr ("" when it is not an attribute):
// levels[N].metrics.NAME (a splat, levels[*], comes as an index from
// splatRefs) or best.metrics.NAME; i is NAME's place.
func levelMetricsOf(attr string, tr hcl.Traversal, at int) (i int, ok bool) {
	switch attr {
	case "levels":
		if len(tr) > at+1 {
			if _, idx := tr[at+1].(hcl.TraverseIndex); idx {
				if m, _ := attrAt(tr, at+2); m == "metrics" {
					return at + 3, true
				}
			}
		}
	case "best":
		if m, _ := attrAt(tr, at+1); m == "metrics" {
			return at + 2, true
		}
	}
	return 0, false
}

// splatRefs checks what splats read of each element where refs sees only
// the list: self.levels[*].metrics.NAME is checked as
// self.levels[0].metrics.NAME would be.
func (c *checker) splatRefs(e hcl.Expression, ctx refContext, stepIdx int) hcl.Diagnostics {
	n, ok := e.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(n, func(n hclsyntax.Node) hcl.Diagnostics {
		sp, ok := n.(*hclsyntax.SplatExpr)
		if !ok {
			return nil
		}
		src, ok1 := sp.Source.(*hclsyntax.ScopeTraversalExpr)
		each, ok2 := sp.Each.(*hclsyntax.RelativeTraversalExpr)
		if !ok1 || !ok2 {
			return nil
		}
		if _, ok := each.Source.(*hclsyntax.AnonSymbolExpr); !ok {
			return nil
		}
		tr := append(slices.Clone(src.Traversal), hcl.TraverseIndex{Key: cty.NumberIntVal(0), SrcRange: sp.MarkerRange})
		tr = append(tr, each.Traversal...)
		if d := c.ref(tr, ctx, stepIdx); d != nil {
			diags = append(diags, d)
		}
		return nil
	})
	return diags
}

// repeatFields are what a metric of a benchmark with repeat = N (N > 1)
// holds, as runner's metricsValue makes it.
var repeatFields = []string{"values", "median", "min", "max", "stddev"}

// metricRef checks a reference to a benchmark's metric, tr[i] naming it
// (self.metrics.rps, step.benchmark.load.metrics.rps): a command's metrics
// are its metric blocks, a load's the names its kind reports
// (LoadKind.Metrics); with repeat = N (N > 1) each is an object of
// repeatFields, else a number. what is how tr names the step ("self").
func (c *checker) metricRef(tr hcl.Traversal, i int, s *Step, what string, level bool, errd func(string, string) *hcl.Diagnostic) *hcl.Diagnostic {
	name, ok := traversalKey(tr, i)
	if !ok || s.Kind != "benchmark" {
		return nil // read whole, or by a key known only when it runs
	}
	ref := what + ".metrics." + name
	if level {
		ref = traversalText(tr[:i+1])
	}
	bench := "This benchmark"
	if what != "self" {
		bench = fmt.Sprintf("%s (at %s)", what, where(s.DeclRange))
	}
	var names []string
	switch {
	case s.Load != nil:
		k := c.lang.LoadKind(s.Load.Kind)
		if k == nil {
			return nil // the unknown kind is reported already
		}
		if !slices.ContainsFunc(k.Metrics, func(m schema.Metric) bool { return m.Name == name }) {
			names := k.MetricNames()
			return errd("Unknown metric",
				fmt.Sprintf("A load %q reports no metric %q.%s Its metrics are %s.", s.Load.Kind, name, didYouMean(name, names), strings.Join(names, ", ")))
		}
	default:
		for _, m := range s.Metrics {
			names = append(names, m.Name)
		}
		if len(names) == 0 {
			return errd("Reference to undeclared metric",
				fmt.Sprintf("%s declares no metric blocks, so it has no metric %q: its metrics are empty. Add metric %q { regex = \"...\" } to it to read one from its command's output.", bench, name, name))
		}
		if !slices.Contains(names, name) {
			return errd("Reference to undeclared metric",
				fmt.Sprintf("%s declares no metric %q.%s Its metrics are %s.", bench, name, didYouMean(name, names), strings.Join(names, ", ")))
		}
	}
	field, ok := traversalKey(tr, i+1)
	switch {
	case len(tr) <= i+1:
		return nil
	case level:
		return errd("Unsupported attribute", fmt.Sprintf("%s is a number: each level of a sweep runs once. Compare it as it is.", ref))
	case s.Repeat > 1 && ok && !slices.Contains(repeatFields, field):
		return errd("Unsupported attribute",
			fmt.Sprintf("With repeat = %d, %s holds %s, not %q.%s", s.Repeat, ref, joinAnd(repeatFields), field, didYouMean(field, repeatFields)))
	case s.Repeat <= 1:
		return errd("Unsupported attribute",
			fmt.Sprintf("%s is a number: its benchmark runs once. Compare it as it is (%s >= 100), or set repeat = N on the step to get %s.", ref, ref, joinAnd(repeatFields)))
	}
	return nil
}

// traversalKey is tr[i] as a name: an attribute, or an index by a string
// written in the plan (metrics["rps"]).
func traversalKey(tr hcl.Traversal, i int) (string, bool) {
	if len(tr) <= i {
		return "", false
	}
	switch s := tr[i].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.IsKnown() && !s.Key.IsNull() && s.Key.Type() == cty.String {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

func (c *checker) outputsDetail(what, attr string, outs []Output) string {
	var names []string
	for _, o := range outs {
		names = append(names, o.Name)
	}
	return fmt.Sprintf("%s has no output %q.%s Its outputs are %s.", what, attr, didYouMean(attr, names), strings.Join(names, ", "))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
