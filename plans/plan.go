package plans

import (
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/steps"
)

// Sensitive is the cty mark on the values of variables declared sensitive.
// cty functions and HCL templates carry marks over to what they compute, so
// anything made from a sensitive value is marked too; whoever prints a
// value checks for the mark (val.HasMark(plans.Sensitive)) and redacts.
const Sensitive = "sensitive"

// LocalTarget is the name of the implicit target: the machine lockstep
// runs on.
const LocalTarget = "local"

// Plan is one decoded and statically checked plan file. Expressions are
// kept unevaluated: they are evaluated with a Scope (from Resolve) and the
// outputs of the steps that ran.
type Plan struct {
	Filename    string
	Source      []byte
	Name        string // the plan block's label, else the file name without its extension
	Description string

	Variables []*Variable
	Locals    []*Local
	// Targets holds the declared targets and, first, the implicit "local"
	// unless the file declares a target "local" itself.
	Targets []*Target
	Steps   []*Step

	// Files maps file names to parsed files for hcl's diagnostic writers.
	Files map[string]*hcl.File
}

// Variable is a declared input.
type Variable struct {
	Name        string
	Description string
	Type        cty.Type  // cty.DynamicPseudoType when no type is declared
	Default     cty.Value // cty.NilVal when there is none: the variable is required
	Sensitive   bool
	Validations []*Condition
	DeclRange   hcl.Range
}

// Local is a named value computed from variables and other locals.
type Local struct {
	Name      string
	Expr      hcl.Expression
	Refs      Refs // what Expr reads
	DeclRange hcl.Range
}

// Target is a machine steps run on.
type Target struct {
	Name         string
	SSH          *SSH           // nil for a local target
	Env, Workdir hcl.Expression // nil when absent
	DeclRange    hcl.Range      // empty for the implicit local target
}

// SSH holds a target's ssh block; each expression is nil when absent.
type SSH struct {
	Host, User, Port, IdentityFile, KnownHosts, ProxyJump, PassphraseEnv,
	InsecureIgnoreHostKey, ConnectTimeout hcl.Expression
	// Hosts, set instead of Host, makes the target a fleet (fleet.go);
	// ConfigFile is the ssh_config file hosts resolve through.
	Hosts, ConfigFile hcl.Expression
	DeclRange         hcl.Range
}

// Step is one step of the plan.
type Step struct {
	Kind, Name  string
	Target      string // target name, "local" by default
	Description string
	// Attrs holds every attribute the step sets, as written, by name:
	// the runner decodes them into the kind's config (steps.Kind.Decode).
	Attrs map[string]hcl.Expression
	// Timeout, Interval and Grace are nil when absent: the kind's
	// defaults apply (steps.Kind.Defaults).
	Timeout, Interval, Grace hcl.Expression
	Always, Keep             bool
	// Command, Log, Pidfile, Env, Workdir and Progress are nil when absent.
	Command, Log, Pidfile, Env, Workdir, Progress hcl.Expression
	Probes                                        []*Probe
	Postconditions, AbortIfs                      []*Condition
	Load                                          *Load     // benchmark with a load block
	Metrics                                       []*Metric // benchmark with a command
	Repeat                                        int       // benchmark; 1 unless set
	DeclRange                                     hcl.Range

	// AttrRefs holds what each attribute above that is an expression
	// reads, by its name in the plan ("command", "progress"), for those
	// that are set.
	AttrRefs map[string]Refs
	// Reads is everything the step's expressions read: its attributes,
	// its probes', its load's, its conditions and error messages. Its
	// Steps() are the earlier steps whose outputs the step needs.
	Reads Refs

	names      []string        // of Attrs, in order (attrNames)
	targetExpr hcl.Expression  // the target attribute, for checks
	postBlocks int             // postcondition blocks, decoded or not
	misspelled map[string]bool // names an unknown attribute or block looks like
}

// attrNames returns the names of attrs in order, sorted into *names on
// first use: the analysis and the checks go through a block's attributes
// in order several times.
func attrNames(attrs map[string]hcl.Expression, names *[]string) []string {
	if len(*names) != len(attrs) {
		*names = keys(attrs)
	}
	return *names
}

// Addr is the step's address as expressions name it: "launch.server".
func (s *Step) Addr() string { return s.Kind + "." + s.Name }

// Shape is what the step's kind checks of it, and what explain asks the
// kind about (steps.Config.ConfirmsFor): the attributes and blocks it
// holds.
func (s *Step) Shape() steps.Shape { return s.shape(nil) }

// shape is Shape, its blocks appended to parts[:0]: the check of a long
// plan asks for each step's, and Static keeps none.
func (s *Step) shape(parts []steps.Part) steps.Shape {
	sh := steps.Shape{Decl: s.DeclRange, Attrs: s.Attrs, Misspelled: s.misspelled}
	if n := s.postBlocks + len(s.Metrics) + 1; n > 1 || s.Load != nil {
		sh.Blocks = slices.Grow(parts[:0], n)
	}
	for _, c := range s.Postconditions {
		sh.Blocks = append(sh.Blocks, steps.Part{Type: "postcondition", Range: c.DeclRange})
	}
	for range s.postBlocks - len(s.Postconditions) {
		sh.Blocks = append(sh.Blocks, steps.Part{Type: "postcondition", Range: s.DeclRange})
	}
	if s.Load != nil {
		sh.Blocks = append(sh.Blocks, steps.Part{Type: "load", Label: s.Load.Kind, Range: s.Load.DeclRange})
	}
	for _, m := range s.Metrics {
		sh.Blocks = append(sh.Blocks, steps.Part{Type: "metric", Label: m.Name, Range: m.DeclRange})
	}
	return sh
}

// ReadsSelf reports whether any of the probe's attributes reads self (pid
// = self.pid): such a probe starts once its step has acted.
func (p *Probe) ReadsSelf() bool {
	for _, rs := range p.AttrRefs {
		if rs.Reads("self") {
			return true
		}
	}
	return false
}

// Probe observes state for its step's conditions.
type Probe struct {
	Kind, Name string
	// Attrs holds every attribute but step and since, which are in Step
	// and Since.
	Attrs map[string]hcl.Expression
	// Step is the address of the launch named with step = step.launch.NAME
	// ("launch.server"), "" when there is none.
	Step string
	// Since is the launch a log probe with path reads from the start of,
	// named with since = step.launch.NAME ("launch.server"), "" when
	// there is none: then it reads from its own step's start.
	Since     string
	DeclRange hcl.Range

	// AttrRefs holds what each of Attrs reads, by name.
	AttrRefs map[string]Refs
	// Reads is the outputs of this probe its step's conditions, error
	// messages and progress read (probe.NAME.ATTR), so the probe gathers
	// only those: nil when the probe is read whole (probe.NAME,
	// probe.NAME["status"]), empty when it is read by nothing.
	Reads map[string]bool

	names     []string       // of Attrs, in order (attrNames)
	stepExpr  hcl.Expression // the step attribute, for checks
	sinceExpr hcl.Expression // the since attribute, for checks
}

// Condition is a postcondition, an abort_if or a variable validation.
type Condition struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression // nil when absent
	Source       string         // the condition's source text exactly as written
	DeclRange    hcl.Range
	// Refs is what Condition reads; MessageRefs what ErrorMessage reads.
	Refs, MessageRefs Refs
}

// Load is a benchmark's load block.
type Load struct {
	Kind      string
	Attrs     map[string]hcl.Expression
	AttrRefs  map[string]Refs // what each of Attrs reads, by name
	DeclRange hcl.Range

	names []string // of Attrs, in order (attrNames)
}

// Metric reads a number from a benchmark command's output; exactly one of
// Regex and JSON is set.
type Metric struct {
	Name      string
	Regex     string
	JSON      string
	DeclRange hcl.Range
}

// Step returns the step at addr ("launch.server"), or nil.
func (p *Plan) Step(addr string) *Step {
	for _, s := range p.Steps {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Target returns the target named name, or nil.
func (p *Plan) Target(name string) *Target {
	for _, t := range p.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Variable returns the variable named name, or nil.
func (p *Plan) Variable(name string) *Variable {
	for _, v := range p.Variables {
		if v.Name == name {
			return v
		}
	}
	return nil
}
