package plans

import (
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"lockstep/loads"
	"lockstep/steps"
)

// ParseFile reads and parses the plan at path; see Parse.
func ParseFile(path string) (*Plan, hcl.Diagnostics) {
	src, err := readLimited(path, MaxPlanBytes)
	if err != nil {
		return &Plan{Filename: path, Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read plan",
			Detail:   fmt.Sprintf("%v. Check the path.", err),
		}}
	}
	return Parse(path, src)
}

// Parse parses src as the plan file filename (HCL native syntax, or JSON
// syntax when the name ends in .json), decodes it, and runs every static
// check, reporting all problems in one pass. The Plan is never nil, so its
// Files can print the diagnostics; it is fit to run only when the
// diagnostics hold no error (warnings are fine).
func Parse(filename string, src []byte) (*Plan, hcl.Diagnostics) {
	return parse(filename, src, MaxPlanBytes)
}

// parse is Parse with the size limit given: the benchmarks read plans of
// 10,000 steps, larger than a plan may be.
func parse(filename string, src []byte, maxBytes int) (*Plan, hcl.Diagnostics) {
	p := &Plan{
		Filename: filename,
		Source:   src,
		Name:     strings.TrimSuffix(filepath.Base(filename), filepath.Ext(filename)),
		Files:    map[string]*hcl.File{},
	}
	file, roots, diags := parseScanned(filename, src, maxBytes)
	if file != nil {
		p.Files[filename] = file
	}
	if diags.HasErrors() || file == nil || file.Body == nil {
		// A body with syntax errors decodes into noise.
		sortDiagnostics(diags)
		return p, diags
	}
	diags = append(diags, decodeBody(p, file.Body, roots)...)
	sortDiagnostics(diags)
	return p, diags
}

// decodeBody decodes the body of p's file into p, analyses what each
// expression reads and checks it. roots is what the parse's walk found in
// each expression (parseScanned); one it lacks is walked anew.
func decodeBody(p *Plan, body hcl.Body, roots *fileScan) hcl.Diagnostics {
	d := &decoder{lang: language(), plan: p, src: p.Source, funcs: Functions(), regexErrs: map[string]error{}}
	diags := d.decode(body)
	d.analysis = analyse(p, d.source, roots)
	return append(diags, d.check()...)
}

// language is Language() built once, for the decoder, which only reads
// it: the language is the code's, the same for every plan, so sharing it
// cannot leave a plan checked against anything stale. (Building it reads
// every kind's config by reflection, a tenth of validating a short plan.)
var language = sync.OnceValue(Language)

// sortDiagnostics orders diagnostics by where they point, so a reader
// goes through the file once; those without a place come first.
func sortDiagnostics(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}

// where says where a declaration is, for messages about a second one.
func where(r hcl.Range) string {
	return fmt.Sprintf("line %d, column %d", r.Start.Line, r.Start.Column)
}

type decoder struct {
	lang  *Schema
	plan  *Plan
	src   []byte
	funcs map[string]function.Function // built once: every check evaluates with them

	regexErrs map[string]error // pattern -> its compile error, so each compiles once
	analysis  *analysis        // what each expression reads and calls, found once

	// what blocks are read with, built on first use: the same for each
	// block of a kind
	own      map[*StepKind]*stepOwn
	probeOwn map[*ProbeKind]map[string]bool // each probe kind's attributes
	schemas  map[any]*hcl.BodySchema        // by schemaOf

	planRange   *hcl.Range
	localTarget bool // the file declares target "local"

	// One array for the plan's steps, sized by its step blocks, and the
	// blocks of the step being read, kept from step to step: nothing
	// read from a block keeps the block (a long plan has thousands).
	stepArray []Step
	blockBuf  []hcl.Block
	blockPtrs []*hcl.Block
}

// newStep is a step of stepArray while it has room.
func (d *decoder) newStep() *Step {
	if len(d.stepArray) == cap(d.stepArray) {
		return new(Step)
	}
	d.stepArray = d.stepArray[:len(d.stepArray)+1]
	return &d.stepArray[len(d.stepArray)-1]
}

func (d *decoder) decode(body hcl.Body) hcl.Diagnostics {
	schema := &hcl.BodySchema{}
	for _, b := range d.lang.Blocks {
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: b.Type, LabelNames: lower(b.Labels)})
	}
	// A body in native syntax that holds only blocks of the language, as
	// every valid plan does, is read block by block from its syntax tree
	// into one hcl.Block, which no decoder keeps (bodyContent would make
	// an array of them: a long plan has thousands).
	sb := nativeBody(body, schema)
	var blocks hcl.Blocks
	var diags hcl.Diagnostics
	if sb == nil {
		var content *hcl.BodyContent
		content, diags = body.Content(schema)
		blocks = content.Blocks
	}
	nBlocks, nSteps := len(blocks), 0
	if sb != nil {
		nBlocks = len(sb.Blocks)
	}
	one := new(hcl.Block)
	blockAt := func(i int) *hcl.Block {
		if sb == nil {
			return blocks[i]
		}
		b := sb.Blocks[i]
		*one = *b.AsHCLBlock() // inlined, so the block it makes stays on the stack
		return one
	}
	for i := range nBlocks {
		if sb != nil && sb.Blocks[i].Type == "step" || sb == nil && blocks[i].Type == "step" {
			nSteps++
		}
	}
	d.stepArray = make([]Step, 0, nSteps)

	// {"variable", "x"} or {"step", "run", "x"} -> first declaration's
	// range, in what it declared (a range a map holds by value would
	// double the map of a long plan's steps)
	seen := make(map[[3]string]*hcl.Range, nBlocks)
	dup := func(kind string, names [2]string, rng *hcl.Range, subject hcl.Range) bool {
		key := [3]string{kind, names[0], names[1]}
		if first, ok := seen[key]; ok {
			name := names[0]
			if names[1] != "" {
				name += "." + names[1] // a step's address
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s %q", kind, name),
				Detail:   fmt.Sprintf("A %s named %q is already declared at %s. Names must be unique: rename or remove one of them.", kind, name, where(*first)),
				Subject:  subject.Ptr(),
			})
			return true
		}
		seen[key] = rng
		return false
	}

	for i := range nBlocks {
		block := blockAt(i)
		switch block.Type {
		case "plan":
			if d.planRange != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate plan block",
					Detail:   fmt.Sprintf("A plan block is already declared at %s. A file holds one plan: remove one of them.", where(*d.planRange)),
					Subject:  block.DefRange.Ptr(),
				})
				continue
			}
			r := block.DefRange
			d.planRange = &r
			diags = append(diags, d.checkName("plan", block.Labels[0], block.LabelRanges[0])...)
			d.plan.Name = block.Labels[0]
			d.plan.Description, diags = d.decodePlan(block, diags)
		case "variable":
			v, ds := d.decodeVariable(block)
			diags = append(diags, ds...)
			if !dup("variable", [2]string{v.Name}, &v.DeclRange, block.LabelRanges[0]) {
				d.plan.Variables = append(d.plan.Variables, v)
			}
		case "locals":
			attrs, ds := block.Body.JustAttributes()
			diags = append(diags, ds...)
			for _, a := range sortedAttrs(attrs) {
				diags = append(diags, d.checkName("local", a.Name, a.NameRange)...)
				if !dup("local", [2]string{a.Name}, &a.NameRange, a.NameRange) {
					d.plan.Locals = append(d.plan.Locals, &Local{Name: a.Name, Expr: a.Expr, DeclRange: a.NameRange})
				}
			}
		case "target":
			t, ds := d.decodeTarget(block)
			diags = append(diags, ds...)
			if !dup("target", [2]string{t.Name}, &t.DeclRange, block.LabelRanges[0]) {
				d.plan.Targets = append(d.plan.Targets, t)
				if t.Name == LocalTarget {
					d.localTarget = true
				}
			}
		case "step":
			s, ds := d.decodeStep(block)
			diags = append(diags, ds...)
			if !dup("step", [2]string{s.Kind, s.Name}, &s.DeclRange, hcl.RangeBetween(block.LabelRanges[0], block.LabelRanges[1])) {
				d.plan.Steps = append(d.plan.Steps, s)
			}
		}
	}
	if !d.localTarget {
		d.plan.Targets = append([]*Target{{Name: LocalTarget}}, d.plan.Targets...)
	}
	return diags
}

// sortedAttrs returns attributes in source order (JustAttributes gives a map).
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
	return out
}

func (d *decoder) checkName(what, name string, rng hcl.Range) hcl.Diagnostics {
	if validName(name) {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s name", what),
		Detail:   fmt.Sprintf("%q cannot be used in references. A name starts with a letter and holds only letters, digits, underscores and dashes.", name),
		Subject:  rng.Ptr(),
	}}
}

// validName is hclsyntax.ValidIdentifier, which runs hcl's scanner on
// the name, without the scanner for a name in ASCII: a letter or an
// underscore, then letters, digits, underscores and dashes.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 0x80:
			return hclsyntax.ValidIdentifier(name)
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return name != ""
}

// bodyContent is body.Content(schema), for the bodies of a parsed file. A
// body in native syntax that holds only what schema takes, as every block
// of a valid plan does, is read here: hcl's Content makes three maps and
// a copy of the body for each block read, and a long plan has thousands.
// Any other body goes to hcl, for its messages. (A body left by
// PartialContent hides what was read from it, which only hcl sees: none
// is read here.)
func bodyContent(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	sb := nativeBody(body, schema)
	if sb == nil {
		return body.Content(schema)
	}
	out := &hcl.BodyContent{Attributes: make(hcl.Attributes, len(sb.Attributes)), MissingItemRange: sb.MissingItemRange()}
	attrs := make([]hcl.Attribute, 0, len(sb.Attributes))
	for name, a := range sb.Attributes {
		attrs = append(attrs, hcl.Attribute{Name: a.Name, Expr: a.Expr, Range: a.SrcRange, NameRange: a.NameRange})
		out.Attributes[name] = &attrs[len(attrs)-1]
	}
	if len(sb.Blocks) > 0 {
		blocks := make([]hcl.Block, len(sb.Blocks))
		out.Blocks = make(hcl.Blocks, len(sb.Blocks))
		for i, b := range sb.Blocks {
			blocks[i] = *b.AsHCLBlock() // inlined, so the block it makes stays on the stack
			out.Blocks[i] = &blocks[i]
		}
	}
	return out, nil
}

// readDirect lets nativeBody read bodies directly; a test turns it off to
// hold what is read that way to what hcl's Content reads.
var readDirect = true

// native is body in native syntax, to be read directly, or nil.
func native(body hcl.Body) *hclsyntax.Body {
	if sb, ok := body.(*hclsyntax.Body); ok && readDirect {
		return sb
	}
	return nil
}

// nativeBody is body in native syntax when schema takes all it holds
// (takesAll): what hcl's Content would read without a word can be read
// from it directly. It is nil otherwise.
func nativeBody(body hcl.Body, schema *hcl.BodySchema) *hclsyntax.Body {
	if sb, ok := body.(*hclsyntax.Body); ok && readDirect && takesAll(sb, schema) {
		return sb
	}
	return nil
}

// takesAll tells whether schema takes every attribute and block of sb,
// each block with its labels, and sb has every attribute schema requires:
// whether hcl's Content would read it without a word.
func takesAll(sb *hclsyntax.Body, schema *hcl.BodySchema) bool {
	for name := range sb.Attributes {
		if !slices.ContainsFunc(schema.Attributes, func(a hcl.AttributeSchema) bool { return a.Name == name }) {
			return false
		}
	}
	for _, a := range schema.Attributes {
		if _, ok := sb.Attributes[a.Name]; a.Required && !ok {
			return false
		}
	}
	for _, b := range sb.Blocks {
		i := slices.IndexFunc(schema.Blocks, func(s hcl.BlockHeaderSchema) bool { return s.Type == b.Type })
		if i < 0 || len(b.Labels) != len(schema.Blocks[i].LabelNames) {
			return false
		}
	}
	return true
}

// schemaFor builds an hcl schema from the language's attributes and blocks;
// nothing is marked required there so that the checks can say more than
// hcl's generic message.
func schemaFor(attrs []Attr, blocks []Block) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, a := range attrs {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: a.Name})
	}
	for _, b := range blocks {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: b.Type, LabelNames: lower(b.Labels)})
	}
	return s
}

// schemaOf returns the schema for blocks of what (a name, or a kind),
// made by build on first use: every block of one is read with the same.
func (d *decoder) schemaOf(what any, build func() *hcl.BodySchema) *hcl.BodySchema {
	if s, ok := d.schemas[what]; ok {
		return s
	}
	if d.schemas == nil {
		d.schemas = map[any]*hcl.BodySchema{}
	}
	s := build()
	d.schemas[what] = s
	return s
}

// lower turns the docs' label names (KIND, NAME) into the words hcl's
// messages use ("Missing name for step").
func lower(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = strings.ToLower(l)
	}
	return out
}

func (d *decoder) blockSchema(typ string) *Block {
	for i := range d.lang.Blocks {
		if d.lang.Blocks[i].Type == typ {
			return &d.lang.Blocks[i]
		}
	}
	panic("plans: no block " + typ + " in Language()")
}

func (d *decoder) decodePlan(block *hcl.Block, diags hcl.Diagnostics) (string, hcl.Diagnostics) {
	b := d.blockSchema("plan")
	content, ds := bodyContent(block.Body, schemaFor(b.Attrs, b.Blocks))
	diags = append(diags, ds...)
	var desc string
	if a, ok := content.Attributes["description"]; ok {
		desc, ds = d.constString(a)
		diags = append(diags, ds...)
	}
	return desc, diags
}

// constValue evaluates an attribute that must not refer to anything.
func (d *decoder) constValue(a *hcl.Attribute, want cty.Type, hint string) (cty.Value, hcl.Diagnostics) {
	if len(a.Expr.Variables()) > 0 {
		return cty.NilVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Constant required",
			Detail:   fmt.Sprintf("%s must be a constant; it cannot refer to variables, locals or steps. %s", a.Name, hint),
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	v, diags := a.Expr.Value(&hcl.EvalContext{Functions: d.funcs})
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if want == cty.DynamicPseudoType {
		return v, nil
	}
	cv, err := convert.Convert(v, want)
	if err != nil || cv.IsNull() || !cv.IsKnown() {
		return cty.NilVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("%s must be a %s. %s", a.Name, want.FriendlyName(), hint),
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	return cv, nil
}

func (d *decoder) constString(a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := d.constValue(a, cty.String, "Write a quoted string.")
	if v == cty.NilVal {
		return "", diags
	}
	return v.AsString(), diags
}

func (d *decoder) constBool(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, diags := d.constValue(a, cty.Bool, "Write true or false.")
	if v == cty.NilVal {
		return false, diags
	}
	return v.True(), diags
}

func (d *decoder) decodeVariable(block *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: block.Labels[0], Type: cty.DynamicPseudoType, DeclRange: block.DefRange}
	diags := d.checkName("variable", v.Name, block.LabelRanges[0])
	b := d.blockSchema("variable")
	content, ds := bodyContent(block.Body, schemaFor(b.Attrs, b.Blocks))
	diags = append(diags, ds...)
	if a, ok := content.Attributes["type"]; ok {
		expr := a.Expr
		if strings.HasSuffix(a.Range.Filename, ".json") {
			// JSON has no type keywords: the type is written as a string
			// holding the native expression, as Terraform reads it.
			if s, ds := d.constString(a); !ds.HasErrors() {
				e, ds := hclsyntax.ParseExpression([]byte(s), a.Range.Filename, a.Expr.Range().Start)
				diags = append(diags, ds...)
				expr = e
			}
		}
		ty, ds := typeexpr.TypeConstraint(expr)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		v.Description, ds = d.constString(a)
		diags = append(diags, ds...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		v.Sensitive, ds = d.constBool(a)
		diags = append(diags, ds...)
	}
	if a, ok := content.Attributes["default"]; ok {
		val, ds := d.constValue(a, cty.DynamicPseudoType, "Write a literal value.")
		diags = append(diags, ds...)
		if val != cty.NilVal {
			cv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value for variable",
					Detail:   fmt.Sprintf("The default does not fit the type %s: %s. Change the default or the type.", typeexpr.TypeString(v.Type), err),
					Subject:  a.Expr.Range().Ptr(),
				})
			} else {
				v.Default = cv
			}
		}
	}
	for _, vb := range content.Blocks {
		c, ds := d.decodeCondition(vb)
		diags = append(diags, ds...)
		if c != nil {
			v.Validations = append(v.Validations, c)
		}
	}
	return v, diags
}

func (d *decoder) decodeCondition(block *hcl.Block) (*Condition, hcl.Diagnostics) {
	schema := d.schemaOf("condition", func() *hcl.BodySchema {
		return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "condition"}, {Name: "error_message"}}}
	})
	// Read straight from the syntax tree when it holds only these, as
	// bodyContent would read it: a plan has a condition block or more
	// for each step.
	var cond, msg hcl.Expression
	var diags hcl.Diagnostics
	if sb := nativeBody(block.Body, schema); sb != nil {
		if a, ok := sb.Attributes["condition"]; ok {
			cond = a.Expr
		}
		if m, ok := sb.Attributes["error_message"]; ok {
			msg = m.Expr
		}
	} else {
		var content *hcl.BodyContent
		content, diags = bodyContent(block.Body, schema)
		if a, ok := content.Attributes["condition"]; ok {
			cond = a.Expr
		}
		if m, ok := content.Attributes["error_message"]; ok {
			msg = m.Expr
		}
	}
	if cond == nil {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing condition",
			Detail:   fmt.Sprintf("A %s block needs condition = EXPRESSION, a bool the step checks.", block.Type),
			Subject:  block.DefRange.Ptr(),
		})
	}
	return &Condition{Condition: cond, ErrorMessage: msg, DeclRange: block.DefRange, Source: d.text(cond.Range())}, diags
}

// text returns the source text of rng in the plan file.
func (d *decoder) text(rng hcl.Range) string { return string(d.source(rng)) }

// source is the bytes of rng in the plan file, nil when it is not there.
func (d *decoder) source(rng hcl.Range) []byte {
	if rng.Filename != d.plan.Filename {
		return nil
	}
	return textAt(d.src, rng.Start.Byte, rng.End.Byte)
}

func (d *decoder) decodeTarget(block *hcl.Block) (*Target, hcl.Diagnostics) {
	t := &Target{Name: block.Labels[0], DeclRange: block.DefRange}
	diags := d.checkName("target", t.Name, block.LabelRanges[0])
	b := d.blockSchema("target")
	content, ds := bodyContent(block.Body, schemaFor(b.Attrs, b.Blocks))
	diags = append(diags, ds...)
	if a, ok := content.Attributes["env"]; ok {
		t.Env = a.Expr
	}
	if a, ok := content.Attributes["workdir"]; ok {
		t.Workdir = a.Expr
	}
	for _, sb := range content.Blocks {
		if t.SSH != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate ssh block",
				Detail:   fmt.Sprintf("This target already has an ssh block at %s. A target is one machine: keep one ssh block.", where(t.SSH.DeclRange)),
				Subject:  sb.DefRange.Ptr(),
			})
			continue
		}
		if t.Name == LocalTarget {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "The local target cannot use ssh",
				Detail:   `"local" names the machine lockstep runs on. Give the remote machine its own name, e.g. target "gpu" { ssh { ... } }.`,
				Subject:  sb.DefRange.Ptr(),
			})
		}
		t.SSH, ds = decodeSSH(sb, &b.Blocks[0])
		diags = append(diags, ds...)
	}
	return t, diags
}

func decodeSSH(block *hcl.Block, b *Block) (*SSH, hcl.Diagnostics) {
	content, diags := bodyContent(block.Body, schemaFor(b.Attrs, b.Blocks))
	s := &SSH{DeclRange: block.DefRange}
	get := func(name string) hcl.Expression {
		if a, ok := content.Attributes[name]; ok {
			return a.Expr
		}
		return nil
	}
	s.Host, s.User, s.Port = get("host"), get("user"), get("port")
	s.IdentityFile, s.KnownHosts, s.ProxyJump = get("identity_file"), get("known_hosts"), get("proxy_jump")
	s.PassphraseEnv, s.InsecureIgnoreHostKey, s.ConnectTimeout = get("passphrase_env"), get("insecure_ignore_host_key"), get("connect_timeout")
	s.Hosts, s.ConfigFile = get("hosts"), get("config_file")
	switch {
	case s.Host == nil && s.Hosts == nil:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing host",
			Detail:   `An ssh block needs host = "NAME": a host name or an alias from ~/.ssh/config (or hosts = [...] for many).`,
			Subject:  block.DefRange.Ptr(),
		})
	case s.Host != nil && s.Hosts != nil:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Both host and hosts",
			Detail:   `An ssh block names one host (host = "NAME") or many (hosts = ["n1", "n2"]), not both: keep one.`,
			Subject:  s.Hosts.Range().Ptr(),
		})
	}
	return s, diags
}

// stepSchema is the union of every kind's attributes and blocks: a step is
// decoded with it, then checked against its own kind so that the message
// can say which kind an attribute belongs to.
func (d *decoder) stepSchema() *hcl.BodySchema {
	return d.schemaOf("step", d.anyStepSchema)
}

func (d *decoder) anyStepSchema() *hcl.BodySchema {
	attrs := append([]Attr(nil), d.lang.Step.Attrs...)
	blocks := append([]Block(nil), d.lang.Step.Blocks...)
	seenA, seenB := map[string]bool{}, map[string]bool{}
	for _, k := range d.lang.Steps {
		for _, a := range k.Attrs {
			if !seenA[a.Name] {
				seenA[a.Name] = true
				attrs = append(attrs, a)
			}
		}
		for _, b := range k.Blocks {
			if !seenB[b.Type] {
				seenB[b.Type] = true
				blocks = append(blocks, b)
			}
		}
	}
	return schemaFor(attrs, blocks)
}

// probeSchema holds every probe kind's attributes, so that one belonging
// to another kind is reported with the kind it belongs to.
func (d *decoder) probeSchema() *hcl.BodySchema {
	return d.schemaOf("probe", func() *hcl.BodySchema {
		var all []Attr
		for _, k := range d.lang.Probes {
			for _, a := range k.Attrs {
				if !slices.ContainsFunc(all, func(b Attr) bool { return b.Name == a.Name }) {
					all = append(all, a)
				}
			}
		}
		return schemaFor(all, nil)
	})
}

func (d *decoder) kindsWith(attr string, block bool) []string {
	var out []string
	for _, k := range d.lang.Steps {
		if block {
			for _, b := range k.Blocks {
				if b.Type == attr {
					out = append(out, k.Name)
				}
			}
			continue
		}
		for _, a := range k.Attrs {
			if a.Name == attr {
				out = append(out, k.Name)
			}
		}
	}
	return out
}

func (d *decoder) stepKindNames() []string {
	var out []string
	for _, k := range d.lang.Steps {
		out = append(out, k.Name)
	}
	return out
}

// stepOwn is what a step kind takes: the attributes of every step and its
// own, and its blocks.
type stepOwn struct {
	attrs, blocks map[string]bool
	schema        []Attr // the attributes, for their types
	// labels holds the number of labels of each block the kind takes that
	// the step schema has; direct is false when the step schema requires
	// an attribute or lacks one the kind takes (takes).
	labels map[string]int
	direct bool
}

// takes tells whether sb holds only what o takes, each block with the
// labels the step schema gives it: whether hcl's Content with the step
// schema would read it without a word (nativeBody) and it holds only
// what the kind takes. o is nil for an unknown kind, which takes nothing.
func (o *stepOwn) takes(sb *hclsyntax.Body) bool {
	if o == nil || !o.direct {
		return false
	}
	for name := range sb.Attributes {
		if !o.attrs[name] {
			return false
		}
	}
	for _, b := range sb.Blocks {
		if n, ok := o.labels[b.Type]; !ok || n != len(b.Labels) {
			return false
		}
	}
	return true
}

// ownOf returns what kind takes, made once per kind.
func (d *decoder) ownOf(kind *StepKind) *stepOwn {
	if o, ok := d.own[kind]; ok {
		return o
	}
	o := &stepOwn{
		attrs:  map[string]bool{},
		blocks: map[string]bool{"probe": true, "postcondition": true, "abort_if": true},
		schema: append(append([]Attr(nil), d.lang.Step.Attrs...), kind.Attrs...),
	}
	for _, a := range o.schema {
		o.attrs[a.Name] = true
	}
	for _, b := range kind.Blocks {
		o.blocks[b.Type] = true
	}
	// What the step schema takes of those, so that takes is nativeBody
	// with the step schema too.
	schema := d.stepSchema()
	o.direct, o.labels = true, map[string]int{}
	for _, a := range schema.Attributes {
		o.direct = o.direct && !a.Required
	}
	o.direct = o.direct && !slices.ContainsFunc(o.schema, func(a Attr) bool {
		return !slices.ContainsFunc(schema.Attributes, func(s hcl.AttributeSchema) bool { return s.Name == a.Name })
	})
	for _, b := range schema.Blocks {
		if o.blocks[b.Type] {
			o.labels[b.Type] = len(b.LabelNames)
		}
	}
	if d.own == nil {
		d.own = map[*StepKind]*stepOwn{}
	}
	d.own[kind] = o
	return o
}

func (d *decoder) decodeStep(block *hcl.Block) (*Step, hcl.Diagnostics) {
	s := d.newStep()
	*s = Step{Kind: block.Labels[0], Name: block.Labels[1], Target: LocalTarget, Repeat: 1, DeclRange: block.DefRange}
	diags := d.checkName("step", s.Name, block.LabelRanges[1])
	kind := d.lang.StepKind(s.Kind)
	if kind == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown step kind",
			Detail:   fmt.Sprintf("There is no step kind %q.%s The kinds are %s.", s.Kind, didYouMean(s.Kind, d.stepKindNames()), strings.Join(d.stepKindNames(), ", ")),
			Subject:  block.LabelRanges[0].Ptr(),
		})
	}
	schema := d.stepSchema()
	var own *stepOwn
	if kind != nil {
		own = d.ownOf(kind)
	}
	// A step in native syntax that holds only what its kind takes, as
	// every step of a valid plan does, is read straight from its syntax
	// tree (a long plan has thousands); any other goes through
	// bodyContent, for its messages.
	var (
		attr   func(name string) *hcl.Attribute
		blocks []*hcl.Block
		ds     hcl.Diagnostics
	)
	if sb := native(block.Body); sb != nil && own.takes(sb) {
		// nativeBody took every name: none is misspelled.
		attr = func(name string) *hcl.Attribute { return sb.Attributes[name].AsHCLAttribute() }
		s.Attrs = make(map[string]hcl.Expression, len(sb.Attributes))
		for name, a := range sb.Attributes {
			s.Attrs[name] = a.Expr
		}
		// One array for the blocks, as bodyContent makes, kept for the
		// next step's.
		hb := slices.Grow(d.blockBuf[:0], len(sb.Blocks))[:len(sb.Blocks)]
		blocks = slices.Grow(d.blockPtrs[:0], len(sb.Blocks))[:len(sb.Blocks)]
		for i, b := range sb.Blocks {
			hb[i] = *b.AsHCLBlock() // inlined, so the block it makes stays on the stack
			blocks[i] = &hb[i]
		}
		d.blockBuf, d.blockPtrs = hb, blocks
	} else {
		var content *hcl.BodyContent
		content, ds = bodyContent(block.Body, schema)
		diags = append(diags, ds...)
		s.misspelled = misspellings(block.Body, schema)
		if kind != nil {
			for _, a := range sortedAttrs(content.Attributes) {
				if own.attrs[a.Name] {
					continue
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported argument",
					Detail: fmt.Sprintf("%s %s step has no argument %q; %s belongs to %s steps. %s",
						article(s.Kind), s.Kind, a.Name, a.Name, joinAnd(d.kindsWith(a.Name, false)), kind.Kind.Hint(a.Name)),
					Subject: a.NameRange.Ptr(),
				})
				delete(content.Attributes, a.Name)
			}
			kept := content.Blocks[:0]
			for _, b := range content.Blocks {
				if own.blocks[b.Type] {
					kept = append(kept, b)
					continue
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported block type",
					Detail: fmt.Sprintf("%s %s step has no %s block; %s blocks belong to %s steps.",
						article(s.Kind), s.Kind, b.Type, b.Type, joinAnd(d.kindsWith(b.Type, true))),
					Subject: b.TypeRange.Ptr(),
				})
			}
			content.Blocks = kept
		}

		attr = func(name string) *hcl.Attribute { return content.Attributes[name] }
		s.Attrs = make(map[string]hcl.Expression, len(content.Attributes))
		for name, a := range content.Attributes {
			s.Attrs[name] = a.Expr
		}
		blocks = content.Blocks
	}
	expr := func(name string) hcl.Expression { return s.Attrs[name] }
	if a := attr("target"); a != nil {
		s.targetExpr = a.Expr
		s.Target, ds = d.decodeStepTarget(a)
		diags = append(diags, ds...)
	}
	if a := attr("description"); a != nil {
		s.Description, ds = d.constString(a)
		diags = append(diags, ds...)
	}
	if a := attr("always"); a != nil {
		s.Always, ds = d.constBool(a)
		diags = append(diags, ds...)
	}
	if a := attr("keep"); a != nil {
		s.Keep, ds = d.constBool(a)
		diags = append(diags, ds...)
	}
	if a := attr("repeat"); a != nil {
		// A constant: its range is the kind's to check (steps).
		v, ds := d.constValue(a, cty.Number, "Write a whole number such as 3.")
		diags = append(diags, ds...)
		if v != cty.NilVal {
			if n, acc := v.AsBigFloat().Int64(); acc == big.Exact && n >= 1 && n <= steps.MaxRepeat {
				s.Repeat = int(n)
			}
		}
	}
	s.Timeout, s.Interval, s.Grace = expr("timeout"), expr("interval"), expr("grace")
	s.Command, s.Log, s.Pidfile, s.Env, s.Workdir, s.Progress = expr("command"), expr("log"), expr("pidfile"), expr("env"), expr("workdir"), expr("progress")

	for _, b := range blocks {
		switch b.Type {
		case "probe":
			pr, ds := d.decodeProbe(b)
			diags = append(diags, ds...)
			if i := slices.IndexFunc(s.Probes, func(o *Probe) bool { return o.Name == pr.Name }); i >= 0 {
				first := s.Probes[i]
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Duplicate probe %q", pr.Name),
					Detail:   fmt.Sprintf("This step already has a probe named %q at %s. Probe names are unique within a step: rename one.", pr.Name, where(first.DeclRange)),
					Subject:  b.LabelRanges[1].Ptr(),
				})
				continue
			}
			s.Probes = append(s.Probes, pr)
		case "postcondition", "abort_if":
			c, ds := d.decodeCondition(b)
			diags = append(diags, ds...)
			if b.Type == "postcondition" {
				s.postBlocks++
			}
			if c == nil {
				continue
			}
			if b.Type == "postcondition" {
				s.Postconditions = append(s.Postconditions, c)
			} else {
				s.AbortIfs = append(s.AbortIfs, c)
			}
		case "load":
			if s.Load != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate load block",
					Detail:   fmt.Sprintf("This step already has a load at %s. A benchmark runs one load: split it into two benchmark steps.", where(s.Load.DeclRange)),
					Subject:  b.DefRange.Ptr(),
				})
				continue
			}
			l, ds := d.decodeLoad(b)
			diags = append(diags, ds...)
			s.Load = l
		case "metric":
			m, ds := d.decodeMetric(b)
			diags = append(diags, ds...)
			dupe := false
			for _, o := range s.Metrics {
				if o.Name == m.Name {
					dupe = true
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  fmt.Sprintf("Duplicate metric %q", m.Name),
						Detail:   fmt.Sprintf("This step already has a metric named %q at %s. Rename one.", m.Name, where(o.DeclRange)),
						Subject:  b.LabelRanges[0].Ptr(),
					})
				}
			}
			if !dupe {
				s.Metrics = append(s.Metrics, m)
			}
		}
	}
	return s, diags
}

func (d *decoder) decodeStepTarget(a *hcl.Attribute) (string, hcl.Diagnostics) {
	tr, diags := hcl.AbsTraversalForExpr(a.Expr)
	if diags.HasErrors() || len(tr) != 2 || tr.RootName() != "target" {
		hint := "Write target = target.NAME for a declared target, or leave it out to run on this machine."
		if v, ds := a.Expr.Value(nil); !ds.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			hint = fmt.Sprintf("Write target = target.%s, without quotes.", v.AsString())
		}
		return LocalTarget, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid target",
			Detail:   "A step's target is a reference to a target block. " + hint,
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	name, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return LocalTarget, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid target",
			Detail:   "Write target = target.NAME.",
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	// Whether the target exists is checked once every block is read.
	return name.Name, nil
}

func (d *decoder) probeKindNames() []string {
	var out []string
	for _, k := range d.lang.Probes {
		out = append(out, k.Name)
	}
	return out
}

func (d *decoder) decodeProbe(block *hcl.Block) (*Probe, hcl.Diagnostics) {
	p := &Probe{Kind: block.Labels[0], Name: block.Labels[1], Attrs: map[string]hcl.Expression{}, DeclRange: block.DefRange}
	diags := d.checkName("probe", p.Name, block.LabelRanges[1])
	kind := d.lang.ProbeKind(p.Kind)
	if kind == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown probe kind",
			Detail:   fmt.Sprintf("There is no probe kind %q.%s The kinds are %s.", p.Kind, didYouMean(p.Kind, d.probeKindNames()), strings.Join(d.probeKindNames(), ", ")),
			Subject:  block.LabelRanges[0].Ptr(),
		})
		return p, diags
	}
	own := d.probeOwn[kind]
	if own == nil {
		own = map[string]bool{}
		for _, a := range kind.Attrs {
			own[a.Name] = true
		}
		if d.probeOwn == nil {
			d.probeOwn = map[*ProbeKind]map[string]bool{}
		}
		d.probeOwn[kind] = own
	}
	probeSchema := d.probeSchema()
	// A probe that holds only what its kind takes is read straight from
	// its syntax tree, as a step is (decodeStep): the probe schema has
	// every kind's attributes and requires none, so Content with it would
	// read such a probe without a word (nativeBody).
	if sb := native(block.Body); sb != nil && takesOnly(sb, own) {
		for name, a := range sb.Attributes {
			if name != "step" && name != "since" {
				p.Attrs[name] = a.Expr
			}
		}
		return p, append(diags, d.probeRefs(p, kind, func(name string) *hcl.Attribute { return sb.Attributes[name].AsHCLAttribute() }, nil, block)...)
	}
	content, ds := bodyContent(block.Body, probeSchema)
	diags = append(diags, ds...)
	misspelled := misspellings(block.Body, probeSchema)
	for _, a := range sortedAttrs(content.Attributes) {
		if own[a.Name] {
			continue
		}
		var kinds []string
		for _, k := range d.lang.Probes {
			if slices.ContainsFunc(k.Attrs, func(b Attr) bool { return b.Name == a.Name }) {
				kinds = append(kinds, k.Name)
			}
		}
		var names []string
		for _, b := range kind.Attrs {
			names = append(names, b.Name)
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsupported argument",
			Detail: fmt.Sprintf("%s %s probe has no argument %q; %s belongs to %s probes.%s Its arguments are %s.",
				article(p.Kind), p.Kind, a.Name, a.Name, joinAnd(kinds), didYouMean(a.Name, names), joinAnd(names)),
			Subject: a.NameRange.Ptr(),
		})
		delete(content.Attributes, a.Name)
	}
	for name, a := range content.Attributes {
		if name == "step" || name == "since" {
			continue
		}
		p.Attrs[name] = a.Expr
	}
	return p, append(diags, d.probeRefs(p, kind, func(name string) *hcl.Attribute { return content.Attributes[name] }, misspelled, block)...)
}

// probeRefs reads a probe's step and since and checks the attributes its
// kind needs, attr giving each attribute the probe sets (nil for one it
// does not).
func (d *decoder) probeRefs(p *Probe, kind *ProbeKind, attr func(string) *hcl.Attribute, misspelled map[string]bool, block *hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a := attr("step"); a != nil {
		p.stepExpr = a.Expr
		var ds hcl.Diagnostics
		p.Step, ds = launchRef(d.lang, p.Kind, "step", a.Expr, "follows what a launch started")
		diags = append(diags, ds...)
	}
	if a := attr("since"); a != nil {
		p.sinceExpr = a.Expr
		var ds hcl.Diagnostics
		p.Since, ds = launchRef(d.lang, p.Kind, "since", a.Expr, "reads from a launch's start")
		diags = append(diags, ds...)
		if p.stepExpr != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Conflicting arguments",
				Detail:   fmt.Sprintf("%s %s probe with step already reads that launch's log from its start; since is for a probe with path. Remove since.", article(p.Kind), p.Kind),
				Subject:  a.NameRange.Ptr(),
			})
		}
	}
	var set []string
	for _, name := range kind.OneOf {
		if attr(name) != nil {
			set = append(set, name)
		}
	}
	switch {
	case len(kind.OneOf) > 0 && len(set) == 0 && !slices.ContainsFunc(kind.OneOf, func(n string) bool { return misspelled[n] }):
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing argument",
			Detail:   fmt.Sprintf("%s %s probe needs one of %s.", article(p.Kind), p.Kind, joinOr(kind.OneOf)),
			Subject:  block.DefRange.Ptr(),
		})
	case len(set) > 1:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Conflicting arguments",
			Detail:   fmt.Sprintf("%s %s probe takes only one of %s; this one sets %s. Keep one.", article(p.Kind), p.Kind, joinOr(kind.OneOf), joinAnd(set)),
			Subject:  attr(set[1]).NameRange.Ptr(),
		})
	}
	return append(diags, missingRequired(p.Kind+" probe", kind.Attrs, attr, misspelled, block.DefRange)...)
}

// takesOnly tells whether every attribute of sb is one of own, and sb
// holds no block.
func takesOnly(sb *hclsyntax.Body, own map[string]bool) bool {
	if len(sb.Blocks) > 0 {
		return false
	}
	for name := range sb.Attributes {
		if !own[name] {
			return false
		}
	}
	return true
}

// missingRequired reports each required attribute of what ("http probe")
// that the block lacks (attr gives each it sets, nil for one it does
// not), unless one misspelled is already reported as a typo.
func missingRequired(what string, attrs []Attr, attr func(string) *hcl.Attribute, misspelled map[string]bool, rng hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range attrs {
		if a.Required && !misspelled[a.Name] && attr(a.Name) == nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing argument",
				Detail:   fmt.Sprintf("%s %s needs %s: %s.", article(what), what, a.Name, a.Doc),
				Subject:  rng.Ptr(),
			})
		}
	}
	return diags
}

func (d *decoder) decodeLoad(block *hcl.Block) (*Load, hcl.Diagnostics) {
	l := &Load{Kind: block.Labels[0], Attrs: map[string]hcl.Expression{}, DeclRange: block.DefRange}
	kind := d.lang.LoadKind(l.Kind)
	if kind == nil {
		var names []string
		for _, k := range d.lang.Loads {
			names = append(names, k.Name)
		}
		return l, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unknown load kind",
			Detail:   fmt.Sprintf("There is no load kind %q.%s The kinds are %s.", l.Kind, didYouMean(l.Kind, names), strings.Join(names, ", ")),
			Subject:  block.LabelRanges[0].Ptr(),
		}}
	}
	schema := d.schemaOf(kind, func() *hcl.BodySchema { return schemaFor(kind.Attrs, nil) })
	if sb := nativeBody(block.Body, schema); sb != nil {
		// Read straight from the syntax tree, as a step is (decodeStep):
		// nativeBody took every name, so none is misspelled.
		for name, a := range sb.Attributes {
			l.Attrs[name] = a.Expr
		}
		return l, missingRequired(l.Kind+" load", kind.Attrs, func(name string) *hcl.Attribute { return sb.Attributes[name].AsHCLAttribute() }, nil, block.DefRange)
	}
	content, diags := bodyContent(block.Body, schema)
	for name, a := range content.Attributes {
		l.Attrs[name] = a.Expr
	}
	diags = append(diags, missingRequired(l.Kind+" load", kind.Attrs, func(name string) *hcl.Attribute { return content.Attributes[name] }, misspellings(block.Body, schema), block.DefRange)...)
	return l, diags
}

func (d *decoder) decodeMetric(block *hcl.Block) (*Metric, hcl.Diagnostics) {
	m := &Metric{Name: block.Labels[0], DeclRange: block.DefRange}
	diags := d.checkName("metric", m.Name, block.LabelRanges[0])
	schema := d.schemaOf("metric", func() *hcl.BodySchema {
		var attrs []Attr
		for _, k := range d.lang.Steps {
			for _, b := range k.Blocks {
				if b.Type == "metric" {
					attrs = b.Attrs
				}
			}
		}
		return schemaFor(attrs, nil)
	})
	content, ds := bodyContent(block.Body, schema)
	diags = append(diags, ds...)
	re, hasRe := content.Attributes["regex"]
	js, hasJS := content.Attributes["json"]
	switch {
	case hasRe && hasJS:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Conflicting arguments",
			Detail:   "A metric is read either with regex or with json, not both. Keep one.",
			Subject:  js.NameRange.Ptr(),
		})
	case !hasRe && !hasJS:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing argument",
			Detail:   `A metric needs regex = "PATTERN" (its first group is the number) or json = "PATH" (into stdout parsed as JSON).`,
			Subject:  block.DefRange.Ptr(),
		})
	}
	if hasRe {
		m.Regex, ds = d.constString(re)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			diags = append(diags, d.checkRegex(m.Regex, re.Expr.Range())...)
		}
	}
	if hasJS {
		m.JSON, ds = d.constString(js)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			if _, err := loads.ParseJSONPath(m.JSON); err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid JSON path",
					Detail:   fmt.Sprintf("%v. Write keys separated by dots and list indexes in brackets, e.g. results.throughput or items[0].value.", err),
					Subject:  js.Expr.Range().Ptr(),
				})
			}
		}
	}
	return m, diags
}

// didYouMean returns " Did you mean "X"?" for the closest of options, or "".
func didYouMean(given string, options []string) string {
	if s := Suggest(given, options); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// Suggest returns the option nearest to given (a typo's likely intent),
// or "" when none is within two edits.
func Suggest(given string, options []string) string {
	best, bestDist := "", 3
	for _, o := range options {
		if dist := levenshtein.Distance(given, o, nil); dist < bestDist {
			best, bestDist = o, dist
		}
	}
	return best
}

// article is "a" or "an" for a kind name as it is read aloud ("an http
// probe", "an exec probe", "a run step").
func article(word string) string {
	if word == "" {
		return "A"
	}
	if strings.ContainsRune("aeiou", rune(word[0])) || strings.HasPrefix(word, "http") {
		return "An"
	}
	return "A"
}

func joinAnd(words []string) string { return joinWith(words, "and") }
func joinOr(words []string) string  { return joinWith(words, "or") }

func joinWith(words []string, last string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + last + " " + words[len(words)-1]
}

// misspellings returns the schema names that the body's unknown
// attributes and blocks look like ("comand" -> command), so that a typo is
// reported once, not again as a missing command.
func misspellings(body hcl.Body, schema *hcl.BodySchema) map[string]bool {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out map[string]bool
	note := func(s string) {
		if s == "" {
			return
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[s] = true
	}
	// Names are listed only for a body that holds one the schema lacks:
	// most hold none.
	var attrs, blocks []string
	for name := range sb.Attributes {
		if slices.ContainsFunc(schema.Attributes, func(a hcl.AttributeSchema) bool { return a.Name == name }) {
			continue
		}
		if attrs == nil {
			for _, a := range schema.Attributes {
				attrs = append(attrs, a.Name)
			}
		}
		note(Suggest(name, attrs))
	}
	for _, b := range sb.Blocks {
		if slices.ContainsFunc(schema.Blocks, func(s hcl.BlockHeaderSchema) bool { return s.Type == b.Type }) {
			continue
		}
		if blocks == nil {
			for _, s := range schema.Blocks {
				blocks = append(blocks, s.Type)
			}
		}
		note(Suggest(b.Type, blocks))
	}
	return out
}

// parseSource reads a plan or a var file (at most max bytes): HCL's JSON
// syntax for a .json file, its native syntax otherwise. The limits that
// keep hcl's parser and evaluator from recursing or computing without
// bound are checked around it (limits.go).
func parseSource(filename string, src []byte, max int) (*hcl.File, hcl.Diagnostics) {
	file, _, diags := parseScanned(filename, src, max)
	return file, diags
}

// parseScanned is parseSource that also returns what the limits' walk of
// a native-syntax file found in each attribute's expression (nil for
// JSON), for the analysis (analyse) to read instead of walking again.
func parseScanned(filename string, src []byte, max int) (*hcl.File, *fileScan, hcl.Diagnostics) {
	// The walk starts with the first piece parsed: a file parsed whole
	// (short, or sent there by a piece) is walked whole after its parse.
	var w *treeChecker
	each := func(piece hclsyntax.Node) {
		if w == nil {
			w = newFileWalk(src)
		}
		w.walkPart(piece)
	}
	file, inPieces, diags := parseSyntax(filename, src, max, each)
	if diags.HasErrors() || strings.HasSuffix(filename, ".json") {
		return file, nil, diags
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return file, nil, diags
	}
	if !inPieces {
		w = newFileWalk(src)
		w.walkPart(body)
	}
	roots, ds := w.scanned()
	if ds.HasErrors() {
		return &hcl.File{Bytes: src}, nil, ds
	}
	return file, roots, diags
}

// parseSyntax checks src against the limits and parses it: a native-
// syntax file in pieces where the limits' scan found where to cut it
// (parseCut, which gives each its body), else whole. inPieces
// tells which.
func parseSyntax(filename string, src []byte, max int, each func(hclsyntax.Node)) (file *hcl.File, inPieces bool, diags hcl.Diagnostics) {
	cuts, diags := checkSource(filename, src, max)
	if diags.HasErrors() {
		// The file is kept so the diagnostic can show its line.
		return &hcl.File{Bytes: src}, false, diags
	}
	if strings.HasSuffix(filename, ".json") {
		file, diags = json.Parse(src, filename)
		return file, false, diags
	}
	if file := parseCut(filename, src, cuts, each); file != nil {
		return file, true, nil
	}
	file, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	return file, false, diags
}

// readLimited reads a file of at most max bytes; a longer one is read
// only up to max+1 bytes, for CheckSource to refuse.
func readLimited(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max)+1))
}

// launchRef reads attribute name (step, since) of a probe, which must name
// a launch as step.launch.NAME, and returns its address ("launch.server");
// what says what the probe does with it, for the message.
func launchRef(lang *Schema, kind, name string, expr hcl.Expression, what string) (string, hcl.Diagnostics) {
	tr, ds := hcl.AbsTraversalForExpr(expr)
	if ds.HasErrors() || len(tr) != 3 || tr.RootName() != "step" {
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid step reference",
			Detail:   fmt.Sprintf("Write %s = step.launch.NAME, naming an earlier launch step.", name),
			Subject:  expr.Range().Ptr(),
		}}
	}
	k, _ := tr[1].(hcl.TraverseAttr)
	n, _ := tr[2].(hcl.TraverseAttr)
	addr := k.Name + "." + n.Name
	if sk := lang.StepKind(k.Name); k.Name != "" && (sk == nil || !sk.Kind.Launches) {
		return addr, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid step reference",
			Detail:   fmt.Sprintf("%s %s probe %s; step.%s is not a launch. Write %s = step.launch.NAME.", article(kind), kind, what, addr, name),
			Subject:  expr.Range().Ptr(),
		}}
	}
	return addr, nil
}

// NameOf reads the name of the plan in the file at path (its plan
// block's label, else the file name without its extension, as run names
// its attempts), whether it is valid or not: the attempts of a plan that no longer parses or checks
// are still found by its name.
func NameOf(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read plan: %w", err)
	}
	p, _ := Parse(path, src)
	return p.Name, nil
}
