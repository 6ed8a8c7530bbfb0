package plans

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"lockstep/schema"
	"lockstep/steps"
)

// refContext says what an expression may refer to, by where it sits.
type refContext int

const (
	ctxValidation refContext = iota // variable validation: var only
	ctxLocal                        // locals and targets: var, local
	ctxAction                       // a step's action: + target, earlier steps
	ctxProbe                        // a probe's attributes: + self
	ctxCheck                        // conditions and progress: + probe
)

var refRoots = []string{"var", "local", "step", "probe", "self", "target"}

// checker holds what the static checks look names up in.
type checker struct {
	*decoder
	vars    map[string]*Variable
	locals  map[string]*Local
	targets map[string]*Target
	steps   map[[2]string]int // kind and name -> index in file order
	funcs   map[string]bool

	// typed unknowns standing in for run-time values, to learn the type of
	// conditions without running anything
	varVals   map[string]cty.Value
	localVals map[string]cty.Value
	// localLimits holds the locals whose values, known before the run,
	// are beyond a limit.
	localLimits map[string]error
	selfVals    map[string]cty.Value // step kind -> its self
	probeVals   map[string]cty.Value // probe kind -> its outputs
	// var, local, step and target as objects: the same in every context
	roots    map[string]cty.Value
	contexts map[*Step]*hcl.EvalContext
	shared   map[string]*hcl.EvalContext               // by step kind and probes
	values   map[*hcl.EvalContext]map[string]cty.Value // by source text
	configs  map[*hcl.EvalContext]map[string]decoded   // by configKey
	keyBuf   []byte                                    // configKey's

	// the values of the attributes of the step, load or probe being
	// checked, for its config: cleared for each (scratch), as nothing
	// keeps them (configKey reads them, decodeConfig copies them into
	// its config)
	stepVals, loadVals, probeAttrVals map[string]cty.Value
	parts                             []steps.Part // the blocks of the shape of the step checked last
}

// scratch is *m emptied, made when it is nil.
func scratch(m *map[string]cty.Value) map[string]cty.Value {
	if *m == nil {
		*m = map[string]cty.Value{}
	}
	clear(*m)
	return *m
}

func (d *decoder) check() hcl.Diagnostics {
	c := &checker{
		decoder:  d,
		vars:     map[string]*Variable{},
		locals:   map[string]*Local{},
		targets:  map[string]*Target{},
		steps:    make(map[[2]string]int, len(d.plan.Steps)),
		funcs:    map[string]bool{},
		contexts: map[*Step]*hcl.EvalContext{},
		shared:   map[string]*hcl.EvalContext{},
		values:   map[*hcl.EvalContext]map[string]cty.Value{},
		configs:  map[*hcl.EvalContext]map[string]decoded{},
	}
	for name := range d.funcs {
		c.funcs[name] = true
	}
	for _, v := range d.plan.Variables {
		c.vars[v.Name] = v
	}
	for _, l := range d.plan.Locals {
		c.locals[l.Name] = l
	}
	for _, t := range d.plan.Targets {
		c.targets[t.Name] = t
	}
	for i, s := range d.plan.Steps {
		c.steps[[2]string{s.Kind, s.Name}] = i
	}
	c.buildValues()

	var diags hcl.Diagnostics
	for _, v := range d.plan.Variables {
		for _, cond := range v.Validations {
			diags = append(diags, c.condition(cond, ctxValidation, -1, "validation")...)
		}
	}
	diags = append(diags, c.checkLocals()...)
	for _, t := range d.plan.Targets {
		diags = append(diags, c.checkTarget(t)...)
	}
	for i, s := range d.plan.Steps {
		diags = append(diags, c.checkStep(i, s)...)
	}
	return diags
}

// buildValues makes the typed unknowns the type checks evaluate against.
func (c *checker) buildValues() {
	c.varVals = map[string]cty.Value{}
	for _, v := range c.plan.Variables {
		c.varVals[v.Name] = cty.UnknownVal(v.Type)
	}
	c.localVals = map[string]cty.Value{}
	c.localLimits = map[string]error{}
	for _, l := range c.plan.Locals {
		c.localVals[l.Name] = cty.DynamicVal
	}
	// Locals that only depend on constants are known here: that lets a
	// command with ${local.port} (a number) pass the quoting check.
	order, _ := localOrder(c.plan.Locals)
	varObj := objectOf(c.varVals)
	var budget localsBudget
	for _, l := range order {
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": varObj, "local": objectOf(c.localVals)},
			Functions: c.decoder.funcs,
		}
		if v, ds := l.Expr.Value(ctx); !ds.HasErrors() {
			if err := budget.add(v); err != nil {
				// A value beyond a limit stays unknown, so that a chain
				// of locals doubling a string stops here.
				c.localLimits[l.Name] = err
				continue
			}
			c.localVals[l.Name] = v
		}
	}

	c.selfVals = map[string]cty.Value{}
	for _, k := range c.lang.Steps {
		c.selfVals[k.Name] = outputsObject(k.Self)
	}
	c.probeVals = map[string]cty.Value{}
	for _, k := range c.lang.Probes {
		c.probeVals[k.Name] = outputsObject(k.Outputs)
	}
	kinds := map[string]map[string]cty.Value{}
	for _, s := range c.plan.Steps {
		if kinds[s.Kind] == nil {
			kinds[s.Kind] = map[string]cty.Value{}
		}
		if v, ok := c.selfVals[s.Kind]; ok {
			if c.targets[s.Target].Fleet() {
				v = fleetSelf(v)
			}
			kinds[s.Kind][s.Name] = v
		}
	}
	steps := map[string]cty.Value{}
	for k, m := range kinds {
		steps[k] = objectOf(m)
	}
	targets := map[string]cty.Value{}
	for _, t := range c.plan.Targets {
		targets[t.Name] = cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(t.Name)})
	}
	c.roots = map[string]cty.Value{
		"var":    varObj,
		"local":  objectOf(c.localVals),
		"step":   objectOf(steps),
		"target": objectOf(targets),
	}
}

func objectOf(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

func outputsObject(outs []Output) cty.Value {
	m := map[string]cty.Value{}
	for _, o := range outs {
		m[o.Name] = cty.UnknownVal(o.Type)
	}
	return objectOf(m)
}

// evalContext returns the typed-unknown context for expressions of step
// (nil outside steps). Steps of one kind with the same probes see the
// same values, so they share one, built once.
func (c *checker) evalContext(step *Step) *hcl.EvalContext {
	if ctx, ok := c.contexts[step]; ok {
		return ctx
	}
	key := ""
	if step != nil {
		var b strings.Builder
		b.WriteString("step\x00" + step.Kind)
		if c.targets[step.Target].Fleet() {
			b.WriteString("\x00fleet")
		}
		for _, p := range step.Probes {
			b.WriteString("\x00" + p.Name + "\x00" + p.Kind)
		}
		key = b.String()
	}
	ctx, ok := c.shared[key]
	if !ok {
		ctx = c.newEvalContext(step)
		c.shared[key] = ctx
	}
	c.contexts[step] = ctx
	return ctx
}

func (c *checker) newEvalContext(step *Step) *hcl.EvalContext {
	if step == nil {
		return &hcl.EvalContext{Variables: c.roots, Functions: c.decoder.funcs}
	}
	vars := maps.Clone(c.roots)
	if v, ok := c.selfVals[step.Kind]; ok {
		vars["self"] = v
	}
	probes := map[string]cty.Value{}
	for _, p := range step.Probes {
		if v, ok := c.probeVals[p.Kind]; ok {
			probes[p.Name] = v
		}
	}
	vars["probe"] = objectOf(probes)
	if c.targets[step.Target].Fleet() {
		vars["target"] = withFleetAttrs(vars["target"], cty.UnknownVal(cty.String), cty.UnknownVal(cty.Number), cty.UnknownVal(cty.List(cty.String)))
	}
	return &hcl.EvalContext{Variables: vars, Functions: c.decoder.funcs}
}

// localOrder sorts locals so each comes after the locals it uses; the
// second result lists locals caught in a cycle.
func localOrder(locals []*Local) ([]*Local, []*Local) {
	byName := map[string]*Local{}
	for _, l := range locals {
		byName[l.Name] = l
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var order, cyclic []*Local
	var visit func(l *Local) bool
	visit = func(l *Local) bool {
		switch state[l.Name] {
		case visiting:
			return false
		case done:
			return true
		}
		state[l.Name] = visiting
		ok := true
		for _, r := range l.Refs {
			if r.Root != "local" {
				continue
			}
			if dep := byName[r.Name]; dep != nil && !visit(dep) {
				ok = false
			}
		}
		state[l.Name] = done
		if ok {
			order = append(order, l)
		} else {
			cyclic = append(cyclic, l)
		}
		return ok
	}
	for _, l := range locals {
		visit(l)
	}
	return order, cyclic
}

func (c *checker) checkLocals() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, l := range c.plan.Locals {
		ds := c.static(l.Expr, ctxLocal, -1)
		diags = append(diags, ds...)
		if err := c.localLimits[l.Name]; err != nil {
			diags = append(diags, localLimitDiag(l, err))
		} else if !ds.HasErrors() {
			_, evalDiags := l.Expr.Value(c.evalContext(nil))
			diags = append(diags, evalDiags...)
		}
	}
	_, cyclic := localOrder(c.plan.Locals)
	for _, l := range cyclic {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cycle in locals",
			Detail:   fmt.Sprintf("local.%s depends on itself, directly or through other locals. Break the cycle: compute one of them from variables or constants.", l.Name),
			Subject:  l.DeclRange.Ptr(),
		})
	}
	return diags
}

func (c *checker) checkTarget(t *Target) hcl.Diagnostics {
	b := c.blockSchema("target")
	diags := checkTargetName(t)
	attrs := map[string]hcl.Expression{"env": t.Env, "workdir": t.Workdir}
	for _, name := range keys(attrs) {
		if e := attrs[name]; e != nil {
			_, ds := c.attr(name, e, b.Attrs, ctxLocal, -1)
			diags = append(diags, ds...)
		}
	}
	if t.SSH == nil {
		return diags
	}
	s := t.SSH
	ssh := map[string]hcl.Expression{
		"host": s.Host, "user": s.User, "port": s.Port, "identity_file": s.IdentityFile,
		"known_hosts": s.KnownHosts, "proxy_jump": s.ProxyJump, "passphrase_env": s.PassphraseEnv,
		"insecure_ignore_host_key": s.InsecureIgnoreHostKey, "connect_timeout": s.ConnectTimeout,
		"hosts": s.Hosts, "config_file": s.ConfigFile,
	}
	for _, name := range keys(ssh) {
		e := ssh[name]
		if e == nil {
			continue
		}
		v, ds := c.attr(name, e, b.Blocks[0].Attrs, ctxLocal, -1)
		diags = append(diags, ds...)
		if name == "connect_timeout" && !ds.HasErrors() {
			diags = append(diags, checkDuration(e, v, name, true)...)
		}
		if name == "hosts" && !ds.HasErrors() {
			diags = append(diags, checkFleet(t, v)...)
		}
	}
	return diags
}

// attr checks one attribute: its references and syntax, its evaluation
// against typed unknowns, and that its value converts to the type the
// schema gives it. The value is cty.NilVal when it could not be checked.
func (c *checker) attr(name string, e hcl.Expression, schema []Attr, ctx refContext, stepIdx int) (cty.Value, hcl.Diagnostics) {
	v, diags := c.typed(e, ctx, stepIdx)
	if v == cty.NilVal || diags.HasErrors() {
		return v, diags
	}
	var want cty.Type
	for _, a := range schema {
		if a.Name == name {
			want = a.Type
		}
	}
	if want == cty.NilType || want == cty.DynamicPseudoType || v.Type() == cty.DynamicPseudoType {
		return v, diags
	}
	if _, err := convert.Convert(v, want); err != nil {
		got := v.Type().FriendlyName()
		if v.IsKnown() && !v.IsNull() && v.Type().IsPrimitiveType() {
			got = showValue(v)
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("%s must be a %s, not %s.", name, want.FriendlyName(), got),
			Subject:  e.Range().Ptr(),
		})
		return cty.NilVal, diags
	}
	return v, diags
}

// typed checks an expression's references and syntax, then evaluates it
// against typed unknowns to catch type and function errors; the value is
// cty.NilVal when it was not evaluated.
func (c *checker) typed(e hcl.Expression, ctx refContext, stepIdx int) (cty.Value, hcl.Diagnostics) {
	f := c.analysis.of(e)
	diags := c.staticOf(e, f, ctx, stepIdx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	var step *Step
	if stepIdx >= 0 {
		step = c.plan.Steps[stepIdx]
	}
	v, ds := c.value(e, f.text, c.evalContext(step))
	return v, append(diags, ds...)
}

// value evaluates e in ctx, once for each text in each context: the same
// text parses into the same tree, and steps of a kind repeat their
// conditions and commands. A value that came with diagnostics is not
// kept, so that each place reports its own. src is e's text when known
// (exprFacts.text), else read here.
func (c *checker) value(e hcl.Expression, src []byte, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if _, ok := e.(hclsyntax.Expression); ok && src == nil {
		src = c.source(e.Range())
	}
	if len(src) == 0 {
		return e.Value(ctx)
	}
	byText := c.values[ctx]
	if v, ok := byText[string(src)]; ok {
		return v, nil
	}
	v, diags := e.Value(ctx)
	if len(diags) == 0 {
		if byText == nil {
			byText = map[string]cty.Value{}
			c.values[ctx] = byText
		}
		byText[string(src)] = v
	}
	return v, diags
}

// static checks e's references against what ctx allows, and what only
// the syntax tree shows: calls to unknown functions and literal regular
// expressions that do not compile (in JSON syntax, the evaluation
// reports these).
func (c *checker) static(e hcl.Expression, ctx refContext, stepIdx int) hcl.Diagnostics {
	return c.staticOf(e, c.analysis.of(e), ctx, stepIdx)
}

// staticOf is static with what e reads and calls (analysis.of).
func (c *checker) staticOf(e hcl.Expression, f exprFacts, ctx refContext, stepIdx int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	levels := false
	for _, r := range f.refs {
		if d := c.refFrom(r, ctx, stepIdx); d != nil {
			diags = append(diags, d)
		}
		levels = levels || r.Root == "self" && r.Name == "levels" || r.Root == "step" && r.Attr == "levels"
	}
	if levels {
		// Only a sweep's levels are read through a splat whose names
		// refs do not see (self.levels[*].metrics.NAME).
		diags = append(diags, c.splatRefs(e, ctx, stepIdx)...)
	}
	for _, call := range f.calls {
		if !c.funcs[call.Name] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Call to unknown function",
				Detail:   fmt.Sprintf("There is no function named %q.%s", call.Name, didYouMean(call.Name, keys(c.funcs))),
				Subject:  call.NameRange.Ptr(),
			})
			continue
		}
		if (call.Name == "regex" || call.Name == "regexall") && len(call.Args) > 0 {
			if pat, ok := literalString(call.Args[0]); ok {
				diags = append(diags, c.checkRegex(pat, call.Args[0].Range())...)
			}
		}
	}
	return diags
}

// literalString returns e's value when it is a string known without
// evaluating anything.
func literalString(e hcl.Expression) (string, bool) {
	if t, ok := e.(*hclsyntax.TemplateExpr); ok && len(t.Parts) == 1 {
		// A quoted string: its one part is its value.
		if l, ok := t.Parts[0].(*hclsyntax.LiteralValueExpr); ok {
			e = l
		}
	}
	if _, ok := e.(*hclsyntax.LiteralValueExpr); !ok && len(e.Variables()) > 0 {
		return "", false
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// checkRegex compiles a literal pattern, once per distinct pattern: a
// long plan repeats the same few.
func (d *decoder) checkRegex(pat string, rng hcl.Range) hcl.Diagnostics {
	err, seen := d.regexErrs[pat]
	if !seen {
		_, err = regexp.Compile(pat)
		d.regexErrs[pat] = err
	}
	if err != nil {
		return hcl.Diagnostics{regexDiag(err, rng)}
	}
	return nil
}

func regexDiag(err error, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid regular expression",
		Detail:   fmt.Sprintf("%v. Patterns use Go's RE2 syntax; in a quoted HCL string a backslash is written twice (\\\\d for \\d).", err),
		Subject:  rng.Ptr(),
	}
}

// PatternErrors reports the calls to regex and regexall in e whose
// pattern, evaluated in ctx, is known and does not compile: one made from
// a variable, which validation cannot see. A pattern is part of the plan,
// not data, so its error counts wherever the call stands: inside can() or
// try() it would otherwise read as "no match", and an abort_if that can
// never hold would pass unnoticed.
func PatternErrors(e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	node, ok := e.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || (call.Name != "regex" && call.Name != "regexall") || len(call.Args) == 0 {
			return nil
		}
		v, ds := call.Args[0].Value(ctx)
		if ds.HasErrors() {
			return nil // the evaluation of the whole reports it
		}
		v, _ = v.UnmarkDeep()
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		if _, err := regexp.Compile(v.AsString()); err != nil {
			diags = append(diags, regexDiag(err, call.Args[0].Range()))
		}
		return nil
	})
	return diags
}

// checkDuration checks a duration whose value is known before the run (a
// constant, or made from constant locals); one computed from variables or
// steps is checked when it is evaluated.
func checkDuration(e hcl.Expression, v cty.Value, name string, positive bool) hcl.Diagnostics {
	if v == cty.NilVal || !v.IsWhollyKnown() {
		return nil
	}
	if _, err := durationOf(v, name, positive); err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid duration",
			Detail:   err.Error(),
			Subject:  e.Range().Ptr(),
		}}
	}
	return nil
}

// durationOf reads a cty string as a Go duration, as the step kinds do
// (steps.DurationOf); the error says how to fix it.
func durationOf(v cty.Value, name string, positive bool) (time.Duration, error) {
	d, err := steps.DurationOf(v, positive)
	if err != nil {
		return 0, &schema.AttrError{Attr: name, Err: err}
	}
	return d, nil
}

func (c *checker) condition(cond *Condition, ctx refContext, stepIdx int, block string) hcl.Diagnostics {
	v, diags := c.typed(cond.Condition, ctx, stepIdx)
	if v != cty.NilVal && !diags.HasErrors() {
		ty := v.Type()
		if ty != cty.Bool && ty != cty.DynamicPseudoType {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Condition is not a bool",
				Detail:   fmt.Sprintf("This %s condition is a %s; it must be true or false. Compare the value, e.g. probe.health.status == 200 or strcontains(self.log, \"ready\").", block, ty.FriendlyName()),
				Subject:  cond.Condition.Range().Ptr(),
			})
		}
	}
	if cond.ErrorMessage != nil {
		v, ds := c.typed(cond.ErrorMessage, ctx, stepIdx)
		diags = append(diags, ds...)
		if v != cty.NilVal && !ds.HasErrors() {
			if _, err := convert.Convert(v, cty.String); err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid error_message",
					Detail:   fmt.Sprintf("error_message must be a string, not a %s.", v.Type().FriendlyName()),
					Subject:  cond.ErrorMessage.Range().Ptr(),
				})
			}
		}
	}
	return diags
}

func (c *checker) checkStep(i int, s *Step) hcl.Diagnostics {
	var diags hcl.Diagnostics
	kind := c.lang.StepKind(s.Kind)
	if s.targetExpr != nil && c.targets[s.Target] == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Reference to undeclared target",
			Detail:   fmt.Sprintf("There is no target named %q.%s Declare it with a target %q block, or fix the name.", s.Target, didYouMean(s.Target, keys(c.targets)), s.Target),
			Subject:  s.targetExpr.Range().Ptr(),
		})
	}
	diags = append(diags, c.checkFleetStep(s)...)
	schema := c.lang.Step.Attrs
	if kind != nil {
		schema = c.ownOf(kind).schema
	}
	// Each attribute evaluated once the action starts is checked against
	// typed unknowns, then decoded with the run's decoder (the kind's
	// config): what validates runs. Target, command and progress are
	// checked on their own below.
	vals := scratch(&c.stepVals)
	for _, name := range attrNames(s.Attrs, &s.names) {
		switch name {
		case "target", "command", "progress":
			continue
		}
		v, ds := c.attr(name, s.Attrs[name], schema, ctxAction, i)
		diags = append(diags, ds...)
		if v != cty.NilVal && !ds.HasErrors() {
			vals[name] = v
		}
	}
	var cfg steps.Config
	if kind != nil {
		dec := c.decodeConfig(c.configKey(s, s.names, s.Attrs, vals, "step", s.Kind), func() map[string]cty.Value { return vals }, func() any { return kind.Kind.Defaults() })
		cfg, _ = dec.cfg.(steps.Config)
		diags = append(diags, c.config(s.Attrs, dec.errs, s.DeclRange)...)
	}
	if s.Command != nil {
		diags = append(diags, c.command(s.Command, ctxAction, i)...)
	}
	if s.Progress != nil {
		v, ds := c.typed(s.Progress, ctxCheck, i)
		diags = append(diags, ds...)
		if v != cty.NilVal && !ds.HasErrors() && v.Type() != cty.Number && v.Type() != cty.DynamicPseudoType {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Progress is not a number",
				Detail:   fmt.Sprintf("progress is a %s; it must be a number from 0 to 1, or null when unknown, e.g. try(tonumber(regex(\"(\\\\d+)%%\", probe.log.last_line)[0]) / 100, null).", v.Type().FriendlyName()),
				Subject:  s.Progress.Range().Ptr(),
			})
		}
	}
	for _, p := range s.Probes {
		diags = append(diags, c.checkProbe(i, s, p)...)
	}
	for _, cond := range s.Postconditions {
		diags = append(diags, c.condition(cond, ctxCheck, i, "postcondition")...)
	}
	for _, cond := range s.AbortIfs {
		diags = append(diags, c.condition(cond, ctxCheck, i, "abort_if")...)
	}
	if s.Load != nil {
		diags = append(diags, c.checkLoad(i, s.Load)...)
	}
	if kind == nil {
		return diags
	}
	if cfg == nil {
		return diags
	}
	sh := s.shape(c.parts)
	if sh.Blocks != nil {
		c.parts = sh.Blocks
	}
	return append(diags, cfg.Static(sh)...)
}

// checkLoad checks a load block's attributes, then decodes them with the
// run's decoder on the kind's defaults.
func (c *checker) checkLoad(i int, l *Load) hcl.Diagnostics {
	var diags hcl.Diagnostics
	k := c.lang.LoadKind(l.Kind)
	var attrs []Attr
	if k != nil {
		attrs = k.Attrs
	}
	vals := scratch(&c.loadVals)
	for _, name := range attrNames(l.Attrs, &l.names) {
		v, ds := c.attr(name, l.Attrs[name], attrs, ctxAction, i)
		diags = append(diags, ds...)
		if v != cty.NilVal && !ds.HasErrors() {
			vals[name] = v
		}
	}
	if k != nil && k.Defaults != nil && !diags.HasErrors() {
		dec := c.decodeConfig(c.configKey(c.plan.Steps[i], l.names, l.Attrs, vals, "load", l.Kind), func() map[string]cty.Value { return vals }, func() any { return k.Defaults() })
		diags = append(diags, c.config(l.Attrs, dec.errs, l.DeclRange)...)
	}
	return diags
}

func (c *checker) checkProbe(i int, s *Step, p *Probe) hcl.Diagnostics {
	var diags hcl.Diagnostics
	kind := c.lang.ProbeKind(p.Kind)
	var attrs []Attr
	if kind != nil {
		attrs = kind.Attrs
	}
	vals := scratch(&c.probeAttrVals)
	for _, name := range attrNames(p.Attrs, &p.names) {
		e := p.Attrs[name]
		if p.Kind == "exec" && name == "command" {
			diags = append(diags, c.command(e, ctxProbe, i)...)
			continue
		}
		v, ds := c.attr(name, e, attrs, ctxProbe, i)
		diags = append(diags, ds...)
		if v != cty.NilVal && !ds.HasErrors() {
			vals[name] = v
		}
	}
	for _, ref := range []struct {
		expr hcl.Expression
		addr string
	}{{p.stepExpr, p.Step}, {p.sinceExpr, p.Since}} {
		if ref.expr == nil || !strings.HasPrefix(ref.addr, "launch.") {
			continue
		}
		if tr, ds := hcl.AbsTraversalForExpr(ref.expr); !ds.HasErrors() {
			if d := c.ref(tr, ctxAction, i); d != nil {
				diags = append(diags, d)
			}
		}
	}
	if kind != nil && kind.Defaults != nil {
		// ProbeValues sets step and since from the probe's own fields.
		key := c.configKey(s, p.names, p.Attrs, vals, "probe", p.Kind, p.Step, p.Since)
		dec := c.decodeConfig(key, func() map[string]cty.Value { return ProbeValues(p, vals) }, func() any { return kind.Defaults() })
		diags = append(diags, c.config(p.Attrs, dec.errs, p.DeclRange)...)
	}
	return diags
}

// configKey names a decoding of a block's attributes (what: its kind and
// whatever else goes into its config) by the source text of each
// attribute vals holds (names are attrs' in order), evaluated in step's context: the same texts in the
// same context evaluate to the same values (checker.value), so they decode
// to the same config. It is the zero key, decoded anew each time, when an
// attribute has no text to be known by (JSON syntax). Its text is valid
// until the next call: a block's key is looked up without being copied.
func (c *checker) configKey(step *Step, names []string, attrs map[string]hcl.Expression, vals map[string]cty.Value, what ...string) configKey {
	b := c.keyBuf[:0]
	for _, w := range what {
		b = append(append(b, w...), 0)
	}
	n := 0
	for _, name := range names {
		if _, ok := vals[name]; !ok {
			continue
		}
		n++
		e := attrs[name]
		if _, native := e.(hclsyntax.Expression); !native {
			return configKey{}
		}
		src := c.textOf(e)
		if len(src) == 0 {
			return configKey{}
		}
		// Lengths first: a text may hold any byte.
		b = strconv.AppendInt(append(b, 0), int64(len(name)), 10)
		b = strconv.AppendInt(append(append(b, ':'), name...), int64(len(src)), 10)
		b = append(append(b, ':'), src...)
	}
	if n != len(vals) {
		return configKey{} // a value of no attribute: none is
	}
	c.keyBuf = b
	return configKey{ctx: c.evalContext(step), text: b}
}

// textOf is e's source text, as the parse's walk recorded it when it
// did (exprFacts.text), without reading e again.
func (c *checker) textOf(e hcl.Expression) []byte {
	if se, ok := e.(hclsyntax.Expression); ok {
		if f, ok := c.analysis.root(se); ok && f.text != nil {
			return f.text
		}
	}
	return c.source(e.Range())
}

// configKey is a decoding's context and texts; its zero value is none.
type configKey struct {
	ctx  *hcl.EvalContext
	text []byte
}

// decoded is a config decoded from a block's values and the errors of
// decoding and checking it (schema.DecodeChecked), shared by every block
// of the same key: neither is changed once made.
type decoded struct {
	cfg  any
	errs []error
}

// decodeConfig decodes the values vals makes into the config defaults
// makes, with the decoder the run uses (schema.Decode and the config's
// Check), so that what validates runs: once for each key, as steps of a
// kind repeat their attributes (and a probe's Check encodes its JSON
// body each time). vals is called only to decode.
func (c *checker) decodeConfig(key configKey, vals func() map[string]cty.Value, defaults func() any) decoded {
	byText := c.configs[key.ctx]
	if d, ok := byText[string(key.text)]; ok && key.ctx != nil {
		return d
	}
	cfg := defaults()
	d := decoded{cfg: cfg, errs: schema.Errors(schema.DecodeChecked(vals(), cfg))}
	if key.ctx != nil {
		if byText == nil {
			byText = map[string]decoded{}
			c.configs[key.ctx] = byText
		}
		byText[string(key.text)] = d
	}
	return d
}

// config reports the errors of decoding a block's attributes
// (decodeConfig): each at its attribute's expression, others at the
// block. vals held the attributes' values from checking them (unknown
// where the run observes them); a missing value was skipped.
func (c *checker) config(attrs map[string]hcl.Expression, errs []error, block hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, err := range errs {
		if _, ok := err.(*schema.OneOfError); ok {
			continue // the parse checks these from the source (a value may not be known yet)
		}
		subject := block
		var ae *schema.AttrError
		if errors.As(err, &ae) {
			if e, ok := attrs[ae.Attr]; ok {
				subject = e.Range()
			}
		}
		var re *syntax.Error
		if errors.As(err, &re) {
			diags = append(diags, regexDiag(re, subject))
			continue
		}
		// Not capitalized: the text starts with the attribute's name, as
		// the plan spells it (warmup, turns).
		summary, detail := "Invalid attribute value", err.Error()+"."
		var inv *schema.Invalid
		if errors.As(err, &inv) {
			summary, detail = inv.Summary, err.Error()
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   detail,
			Subject:  subject.Ptr(),
		})
	}
	return diags
}
