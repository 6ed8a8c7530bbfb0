package plans

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"lockstep/steps"
)

// EnvPrefix starts the names of environment variables that set plan
// variables: LOCKSTEP_VAR_moe_backend sets var.moe_backend.
const EnvPrefix = "LOCKSTEP_VAR_"

// Inputs are the values given for a plan's variables.
type Inputs struct {
	Vars     []string // "NAME=VALUE", in command-line order (the last wins)
	VarFiles []string // HCL (or .json) files of NAME = VALUE, later files win
	Environ  []string // os.Environ(); only LOCKSTEP_VAR_* entries are read
}

// Scope holds a plan's resolved variables and locals: what every
// expression of the plan is evaluated against.
type Scope struct {
	// Vars and Locals hold the values; sensitive ones (and anything
	// computed from them) carry the Sensitive mark.
	Vars, Locals map[string]cty.Value
	// Files holds the plan's files and the var files, for diagnostic
	// writers.
	Files map[string]*hcl.File
	// Sources says where each variable's value came from: "default",
	// "-var", "var-file NAME" or "LOCKSTEP_VAR_NAME".
	Sources map[string]string

	targets cty.Value
	funcs   map[string]function.Function
	// moves maps positions in a var file to its masked copy in Files.
	moves map[string]func(p hcl.Pos, end bool) hcl.Pos
}

// MissingValue is the Extra of the diagnostic Resolve reports for a
// required variable that got no value, so a caller can tell "not given
// yet" from "given wrong" (explain shows a plan as written then).
type MissingValue struct{ Name string }

type rawValue struct {
	val    cty.Value
	source string
	rng    *hcl.Range // where the value is written, when it is in a file
}

// Resolve gives each variable its value (command line first, then var
// files, then the environment, then the default), converts it to the
// declared type, runs the validations, marks sensitive values and
// evaluates the locals. The Scope is never nil, so its Files can print the
// diagnostics.
func (p *Plan) Resolve(in Inputs) (*Scope, hcl.Diagnostics) {
	s := &Scope{
		Vars:    map[string]cty.Value{},
		Locals:  map[string]cty.Value{},
		Files:   map[string]*hcl.File{},
		Sources: map[string]string{},
		funcs:   Functions(),
	}
	for name, f := range p.Files {
		s.Files[name] = f
	}
	var diags hcl.Diagnostics
	given := map[string]rawValue{}
	var names []string
	for _, v := range p.Variables {
		names = append(names, v.Name)
	}

	// Lowest precedence first; each source overwrites what came before.
	for _, kv := range in.Environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		name = strings.TrimPrefix(name, EnvPrefix)
		v := p.Variable(name)
		if v == nil {
			continue // the environment is shared: other plans' variables are fine
		}
		if d := valueTooLong(v, value, EnvPrefix+name); d != nil {
			diags = append(diags, d)
			continue
		}
		val, ds := s.parseRaw(v, value, EnvPrefix+name)
		diags = append(diags, ds...)
		if val != cty.NilVal {
			given[name] = rawValue{val: val, source: EnvPrefix + name}
		}
	}
	for _, path := range in.VarFiles {
		vals, ds := s.readVarFile(p, path, names)
		diags = append(diags, ds...)
		for name, fv := range vals {
			given[name] = rawValue{val: fv.val, source: "var-file " + path, rng: fv.rng}
		}
	}
	for _, kv := range in.Vars {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid -var option",
				Detail:   fmt.Sprintf("-var %q is not NAME=VALUE. Write -var NAME=VALUE, e.g. -var moe_backend=flashinfer_trtllm.", kv),
			})
			continue
		}
		v := p.Variable(name)
		if v == nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("-var %s: the plan declares no variable %q.%s", kv, name, didYouMean(name, names)),
			})
			continue
		}
		if d := valueTooLong(v, value, "-var "+name); d != nil {
			diags = append(diags, d)
			continue
		}
		val, ds := s.parseRaw(v, value, "-var")
		diags = append(diags, ds...)
		if val != cty.NilVal {
			given[name] = rawValue{val: val, source: "-var"}
		}
	}

	for _, v := range p.Variables {
		raw, ok := given[v.Name]
		if !ok || raw.val.IsNull() {
			if v.Default == cty.NilVal {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "No value for required variable",
					Detail: fmt.Sprintf("Variable %q has no default. Give it a value with -var %s=VALUE, in a -var-file, or in the environment as %s%s.",
						v.Name, v.Name, EnvPrefix, v.Name),
					Subject: v.DeclRange.Ptr(),
					Extra:   MissingValue{Name: v.Name},
				})
				s.Vars[v.Name] = cty.UnknownVal(v.Type)
				continue
			}
			raw = rawValue{val: v.Default, source: "default"}
		}
		val, err := convert.Convert(raw.val, v.Type)
		if err != nil {
			subject := raw.rng
			if subject == nil {
				subject = v.DeclRange.Ptr()
			}
			why := ": " + err.Error()
			if v.Sensitive && !v.Type.IsPrimitiveType() {
				why = "" // it may name the value's own keys
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for variable",
				Detail:   fmt.Sprintf("The value for %q from %s does not fit its type %s%s.", v.Name, raw.source, typeexpr.TypeString(v.Type), why),
				Subject:  subject,
			})
			s.Vars[v.Name] = cty.UnknownVal(v.Type)
			continue
		}
		if err := CheckValue(val); err != nil {
			subject := raw.rng
			if subject == nil {
				subject = v.DeclRange.Ptr()
			}
			diags = append(diags, limitDiag("Value beyond a limit",
				limitf("the value for %q from %s is beyond a limit: %s", v.Name, raw.source, err),
				"Give a smaller value.", *subject))
			s.Vars[v.Name] = cty.UnknownVal(v.Type)
			continue
		}
		if v.Sensitive {
			val = val.Mark(Sensitive)
		}
		s.Vars[v.Name] = val
		s.Sources[v.Name] = raw.source
	}
	if diags.HasErrors() {
		return s, s.moved(diags)
	}

	for _, v := range p.Variables {
		diags = append(diags, s.hideIn(s.validate(v))...)
	}

	order, cyclic := localOrder(p.Locals)
	for _, l := range cyclic {
		s.Locals[l.Name] = cty.DynamicVal
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cycle in locals",
			Detail:   fmt.Sprintf("local.%s depends on itself. Break the cycle.", l.Name),
			Subject:  l.DeclRange.Ptr(),
		})
	}
	var budget localsBudget
	for _, l := range order {
		val, ds := l.Expr.Value(s.EvalContext(nil))
		diags = append(diags, s.hideIn(ds)...)
		if err := budget.add(val); err != nil {
			// Doubling a string or a list through a chain of locals
			// would otherwise grow without bound.
			diags = append(diags, localLimitDiag(l, err))
			val = cty.DynamicVal
		}
		s.Locals[l.Name] = val
	}

	targets := map[string]cty.Value{}
	for _, t := range p.Targets {
		attrs := map[string]cty.Value{"name": cty.StringVal(t.Name)}
		if t.SSH != nil && t.SSH.Host != nil {
			if h, ds := t.SSH.Host.Value(s.EvalContext(nil)); !ds.HasErrors() {
				if hs, err := convert.Convert(h, cty.String); err == nil {
					attrs["host"] = hs
				}
			}
		}
		if t.Fleet() {
			if hosts, err := s.FleetHosts(t); err == nil {
				attrs["hosts"] = stringList(hosts)
			}
		}
		targets[t.Name] = cty.ObjectVal(attrs)
	}
	s.targets = objectOf(targets)
	return s, s.moved(diags)
}

// parseRaw reads a value given as text (-var, the environment): a string
// for primitive types, an HCL expression for collections and objects, as
// Terraform reads -var.
func (s *Scope) parseRaw(v *Variable, raw, source string) (cty.Value, hcl.Diagnostics) {
	if v.Type.IsPrimitiveType() || v.Type == cty.DynamicPseudoType {
		val, err := convert.Convert(cty.StringVal(raw), v.Type)
		if err != nil {
			given := fmt.Sprintf("%q", raw)
			if v.Sensitive {
				given = "a value (sensitive, not shown)"
			}
			return cty.NilVal, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for variable",
				Detail:   fmt.Sprintf("%s gives %s for %q, which must be a %s: %s.", source, given, v.Name, v.Type.FriendlyName(), err),
				Subject:  v.DeclRange.Ptr(),
			}}
		}
		return val, nil
	}
	filename := fmt.Sprintf("<value for var.%s>", v.Name)
	if !v.Sensitive {
		// A sensitive value's text is no source to quote.
		s.Files[filename] = &hcl.File{Bytes: []byte(raw)}
	}
	if diags := checkTokens(filename, []byte(raw), hcl.InitialPos, false); diags.HasErrors() {
		return cty.NilVal, s.hideDetail(v, diags)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), filename, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, s.hideDetail(v, diags)
	}
	if ds := checkTree(expr); ds.HasErrors() {
		return cty.NilVal, ds
	}
	boundOperators(expr)
	val, ds := expr.Value(nil)
	diags = append(diags, ds...)
	if ds.HasErrors() {
		return cty.NilVal, s.hideDetail(v, diags)
	}
	return val, diags
}

// hideDetail keeps only the summary of diagnostics about a sensitive
// variable's value given as text: hcl's details quote the source they
// could not read ("There is no variable named ...").
func (s *Scope) hideDetail(v *Variable, diags hcl.Diagnostics) hcl.Diagnostics {
	if !v.Sensitive {
		return diags
	}
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		c.Detail = fmt.Sprintf("The value given for var.%s (sensitive, not shown) is read as an HCL expression, as for every list, map or object: fix it where it is set.", v.Name)
		out[i] = &c
	}
	return out
}

// valueTooLong refuses a value given as text (-var, the environment)
// longer than MaxVarValueBytes, before it is read.
func valueTooLong(v *Variable, raw, source string) *hcl.Diagnostic {
	if len(raw) <= MaxVarValueBytes {
		return nil
	}
	return limitDiag("Value too long",
		limitf("%s gives %s for %q; a value given on the command line or in the environment is at most %s", source, size(len(raw)), v.Name, size(MaxVarValueBytes)),
		"Put a large value in a -var-file (at most "+size(MaxVarFileBytes)+"), or in a file the plan's commands read.", v.DeclRange)
}

type fileValue struct {
	val cty.Value
	rng *hcl.Range
}

func (s *Scope) readVarFile(p *Plan, path string, names []string) (map[string]fileValue, hcl.Diagnostics) {
	src, err := readLimited(path, MaxVarFileBytes)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read var file",
			Detail:   fmt.Sprintf("%v. Check the -var-file path.", err),
		}}
	}
	file, diags := parseSource(path, src, MaxVarFileBytes)
	if diags.HasErrors() || file == nil {
		// Which lines hold a sensitive value cannot be told: no line of
		// the file is shown when the plan has one.
		if !p.hasSensitive() {
			s.Files[path] = file
		}
		return nil, diags
	}
	attrs, ds := file.Body.JustAttributes()
	diags = append(diags, ds...)
	s.maskVarFile(p, path, src, attrs)
	out := map[string]fileValue{}
	for _, a := range sortedAttrs(attrs) {
		if p.Variable(a.Name) == nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("The plan declares no variable %q, so this value is ignored.%s", a.Name, didYouMean(a.Name, names)),
				Subject:  a.NameRange.Ptr(),
			})
			continue
		}
		val, ds := a.Expr.Value(&hcl.EvalContext{Functions: s.funcs})
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			out[a.Name] = fileValue{val, a.Expr.Range().Ptr()}
		}
	}
	return out, diags
}

func (p *Plan) hasSensitive() bool {
	for _, v := range p.Variables {
		if v.Sensitive {
			return true
		}
	}
	return false
}

// maskVarFile registers the var file for diagnostics with the value of
// each sensitive variable shown as (sensitive), and moves the ranges of
// the diagnostics about it (made before and after, in Resolve) to match.
func (s *Scope) maskVarFile(p *Plan, path string, src []byte, attrs hcl.Attributes) {
	var spans [][2]int
	for _, a := range sortedAttrs(attrs) {
		if v := p.Variable(a.Name); v != nil && v.Sensitive {
			r := a.Expr.Range()
			spans = append(spans, [2]int{r.Start.Byte, r.End.Byte})
		}
	}
	if len(spans) == 0 {
		s.Files[path] = &hcl.File{Bytes: src}
		return
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	masked, move := maskSource(src, spans)
	s.Files[path] = &hcl.File{Bytes: masked}
	if s.moves == nil {
		s.moves = map[string]func(hcl.Pos, bool) hcl.Pos{}
	}
	s.moves[path] = move
}

// moved points the diagnostics' ranges in masked var files at the masked
// text (copies: a range may be shared).
func (s *Scope) moved(diags hcl.Diagnostics) hcl.Diagnostics {
	if len(s.moves) == 0 {
		return diags
	}
	move := func(r *hcl.Range) *hcl.Range {
		if r == nil || s.moves[r.Filename] == nil {
			return r
		}
		m := s.moves[r.Filename]
		return &hcl.Range{Filename: r.Filename, Start: m(r.Start, false), End: m(r.End, true)}
	}
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		c.Subject, c.Context = move(d.Subject), move(d.Context)
		out[i] = &c
	}
	return out
}

func (s *Scope) validate(v *Variable) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := s.EvalContext(nil)
	for _, c := range v.Validations {
		ok, ds := s.conditionHolds(c.Condition, ctx)
		diags = append(diags, ds...)
		if ds.HasErrors() || ok {
			continue
		}
		msg := fmt.Sprintf("var.%s does not pass its validation (%s).", v.Name, c.Source)
		if c.ErrorMessage != nil {
			if m, ds := c.ErrorMessage.Value(ctx); !ds.HasErrors() {
				if ms, err := convert.Convert(m, cty.String); err == nil && ms.IsKnown() && !ms.IsNull() && !ms.IsMarked() {
					msg = ms.AsString()
				}
			}
		}
		value := "(sensitive)"
		if !v.Sensitive {
			value = showValue(s.Vars[v.Name])
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s\n\nThe value %s came from %s.", msg, value, s.Sources[v.Name]),
			Subject:  c.Condition.Range().Ptr(),
		})
	}
	return diags
}

func (s *Scope) conditionHolds(e hcl.Expression, ctx *hcl.EvalContext) (bool, hcl.Diagnostics) {
	v, diags := e.Value(ctx)
	if diags.HasErrors() {
		return false, diags
	}
	v, _ = v.Unmark()
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil || bv.IsNull() || !bv.IsKnown() {
		return false, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Condition is not a bool",
			Detail:   "The condition must be true or false.",
			Subject:  e.Range().Ptr(),
		}}
	}
	return bv.True(), nil
}

// EvalContext returns the context expressions are evaluated in: var,
// local, target, the functions, and the extra roots given (step, probe,
// self). Each call returns a new context.
func (s *Scope) EvalContext(extra map[string]cty.Value) *hcl.EvalContext {
	vars := map[string]cty.Value{
		"var":   objectOf(s.Vars),
		"local": objectOf(s.Locals),
	}
	if s.targets != cty.NilVal {
		vars["target"] = s.targets
	}
	for k, v := range extra {
		vars[k] = v
	}
	return &hcl.EvalContext{Variables: vars, Functions: s.funcs}
}

// StepConfig decodes st's attributes into its kind's config with the
// decoder validate uses (steps.Kind.Decode), each evaluated in this
// scope with the extra roots given (step: the outputs of the steps that
// ran). Target is decoded as its name; progress, evaluated on every turn,
// is left out. sensitive names the attributes whose values are. An
// attribute that does not evaluate is an *EvalError.
func (s *Scope) StepConfig(st *Step, extra map[string]cty.Value) (cfg steps.Config, sensitive []string, err error) {
	kind, ok := steps.Lookup(st.Kind)
	if !ok {
		return nil, nil, fmt.Errorf("there is no step kind %q", st.Kind)
	}
	ectx := s.EvalContext(extra)
	vals := map[string]cty.Value{"target": cty.StringVal(st.Target)}
	for _, name := range keys(st.Attrs) {
		if name == "target" || name == "progress" {
			continue
		}
		v, diags := st.Attrs[name].Value(ectx)
		if diags.HasErrors() {
			return nil, nil, &EvalError{Attr: name, Diags: diags}
		}
		if IsSensitive(v) {
			sensitive = append(sensitive, name)
		}
		vals[name] = v
	}
	cfg, err = kind.Decode(vals)
	return cfg, sensitive, err
}

// EvalError is an attribute that could not be evaluated.
type EvalError struct {
	Attr  string
	Diags hcl.Diagnostics
}

func (e *EvalError) Error() string { return e.Attr + ": " + e.Diags.Error() }

// StepOutputs builds the value of the step root for EvalContext from the
// recorded outputs of the steps that ran, keyed by address
// ("launch.server"): step.launch.server.pid then reads outputs["launch.server"].pid.
func StepOutputs(outputs map[string]cty.Value) cty.Value {
	kinds := map[string]map[string]cty.Value{}
	for addr, v := range outputs {
		kind, name, ok := strings.Cut(addr, ".")
		if !ok {
			continue
		}
		if kinds[kind] == nil {
			kinds[kind] = map[string]cty.Value{}
		}
		kinds[kind][name] = v
	}
	out := map[string]cty.Value{}
	for kind, names := range kinds {
		out[kind] = objectOf(names)
	}
	return objectOf(out)
}
