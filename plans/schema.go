package plans

import (
	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/probes"
	"lockstep/schema"
	"lockstep/steps"
)

// Schema describes the plan language as plain data: every block, every
// attribute with a one-line doc and its default, the self outputs of each
// step kind, the probes, the loads and the functions. The decoder, the
// validator, explain, fmt and the docs all read it, so there is one place
// to change when the language changes.
type Schema struct {
	Blocks    []Block // top-level blocks, in the order a plan usually has them
	Step      Block   // the attributes and blocks every step kind accepts
	Steps     []StepKind
	Probes    []ProbeKind
	Loads     []LoadKind
	Functions []Func
}

// Block describes a block type.
type Block = schema.Block

// Attr describes an attribute.
type Attr = schema.Attr

// StepKind describes one kind of step.
type StepKind struct {
	Name   string
	Doc    string
	Attrs  []Attr  // besides Schema.Step's
	Blocks []Block // besides Schema.Step's
	Self   []Output
	// DefaultTimeout and DefaultInterval are Go durations; DefaultTimeout
	// "" means a single evaluation.
	DefaultTimeout  string
	DefaultInterval string
	// Defaults holds each attribute's default as docs show it, the
	// attributes of every step included, timeout and interval as this
	// kind has them ("" for none).
	Defaults map[string]string
	// Confirms lists, in words, what the kind checks before the plan's
	// own postconditions.
	Confirms []string
	// Kind is the kind itself (steps.Kinds): its config, its checks,
	// what it confirms for a given step.
	Kind steps.Kind
}

// Output is a value a step or probe exposes to expressions.
type Output = schema.Output

// ProbeKind describes one kind of probe.
type ProbeKind struct {
	Name    string
	Doc     string
	Attrs   []Attr
	Outputs []Output
	// OneOf lists attributes of which exactly one must be set.
	OneOf []string
	// Defaults returns a fresh config holding the kind's defaults: what
	// validate and the run decode a probe block onto.
	Defaults func() probes.Config
}

// LoadKind describes one kind of benchmark load.
type LoadKind struct {
	Name  string
	Doc   string
	Attrs []Attr
	// Metrics are the numbers the load reports, as self.metrics.NAME
	// (and step.benchmark.NAME.metrics.NAME) read them, with the way
	// each is better; validation rejects any other name. Some are there
	// only when they apply (the latency figures once a request has ended,
	// tpot and itl when streaming). With repeat = N (N > 1) each is an
	// object of values, median, min, max and stddev.
	Metrics []schema.Metric
	// Defaults returns a new config of the kind holding its defaults:
	// validation decodes a load block into it as the run does.
	Defaults func() loads.Config `json:"-"`
}

// Func describes a function available in expressions.
type Func struct {
	Name string
	Doc  string
}

// StepKind returns the kind named name, or nil.
func (l *Schema) StepKind(name string) *StepKind {
	for i := range l.Steps {
		if l.Steps[i].Name == name {
			return &l.Steps[i]
		}
	}
	return nil
}

// ProbeKind returns the probe kind named name, or nil.
func (l *Schema) ProbeKind(name string) *ProbeKind {
	for i := range l.Probes {
		if l.Probes[i].Name == name {
			return &l.Probes[i]
		}
	}
	return nil
}

// LoadKind returns the load kind named name, or nil.
func (l *Schema) LoadKind(name string) *LoadKind {
	for i := range l.Loads {
		if l.Loads[i].Name == name {
			return &l.Loads[i]
		}
	}
	return nil
}

// Output returns the self output named name, or nil.
func (k *StepKind) Output(name string) *Output { return findOutput(k.Self, name) }

// Output returns the probe output named name, or nil.
func (k *ProbeKind) Output(name string) *Output { return findOutput(k.Outputs, name) }

func findOutput(outs []Output, name string) *Output {
	for i := range outs {
		if outs[i].Name == name {
			return &outs[i]
		}
	}
	return nil
}

// Language returns the description of the plan language. Each call builds
// a fresh value, so a caller may keep or change its copy.
func Language() *Schema {
	str, num, boolean := cty.String, cty.Number, cty.Bool
	strMap := cty.Map(cty.String)
	condition := func(typ, doc string) Block {
		return Block{
			Type: typ, Doc: doc, Many: true,
			Attrs: []Attr{
				{Name: "condition", Type: boolean, Doc: "an expression that must be true (false for abort_if)", Required: true},
				{Name: "error_message", Type: str, Doc: "what to tell the reader when the condition decides the step fails"},
			},
		}
	}
	return &Schema{
		Blocks: []Block{
			{
				Type: "plan", Labels: []string{"NAME"},
				Doc: "names the plan (its attempts are kept under .lockstep/attempts/NAME); at most one, the file name when absent",
				Attrs: []Attr{
					{Name: "description", Type: str, Doc: "what the plan verifies, one sentence", Const: true},
				},
			},
			{
				Type: "variable", Labels: []string{"NAME"}, Many: true,
				Doc: "an input set with -var NAME=VALUE, -var-file FILE or LOCKSTEP_VAR_NAME",
				Attrs: []Attr{
					{Name: "type", Doc: "type constraint: string, number, bool, list(T), map(T), object({...}), any", Default: "any"},
					{Name: "default", Doc: "value when none is given; without one the variable is required", Const: true},
					{Name: "description", Type: str, Doc: "what the variable is for", Const: true},
					{Name: "sensitive", Type: boolean, Doc: "never show the value (or anything made from it) in output or records", Default: "false", Const: true},
				},
				Blocks: []Block{condition("validation", "a check on the value given; error_message says what is allowed")},
			},
			{
				Type: "locals", Many: true,
				Doc: "named values computed from variables and other locals: local.NAME",
			},
			{
				Type: "target", Labels: []string{"NAME"}, Many: true,
				Doc: "a machine steps run on; \"local\" (this machine) always exists",
				Attrs: []Attr{
					{Name: "env", Type: strMap, Doc: "environment variables for every command on this target", Default: "{}"},
					{Name: "workdir", Type: str, Doc: "directory commands run in", Default: "the current directory (local) or the login directory (ssh)"},
				},
				Blocks: []Block{{
					Type: "ssh", Doc: "reach the target over SSH; settings from ~/.ssh/config apply as ssh would apply them",
					Attrs: []Attr{
						{Name: "host", Type: str, Doc: "host name or ~/.ssh/config alias; set host or hosts"},
						{Name: "hosts", Type: cty.List(str), Doc: "many hosts (names or aliases), in rank order: a fleet; each step on it runs on every host at once, each over its own connection"},
						{Name: "config_file", Type: str, Doc: "ssh_config file the hosts resolve through, as ssh -F", Default: "~/.ssh/config, then /etc/ssh/ssh_config"},
						{Name: "user", Type: str, Doc: "login user", Default: "from ~/.ssh/config, else the current user"},
						{Name: "port", Type: num, Doc: "SSH port", Default: "from ~/.ssh/config, else 22"},
						{Name: "identity_file", Type: str, Doc: "private key file", Default: "ssh-agent, then ~/.ssh/id_*"},
						{Name: "known_hosts", Type: str, Doc: "known_hosts file used to verify the host key", Default: "~/.ssh/known_hosts"},
						{Name: "proxy_jump", Type: str, Doc: "jump host, as ssh -J", Default: "from ~/.ssh/config"},
						{Name: "passphrase_env", Type: str, Doc: "environment variable holding the key's passphrase"},
						{Name: "insecure_ignore_host_key", Type: boolean, Doc: "skip host key verification (tests only)", Default: "false"},
						{Name: "connect_timeout", Type: str, Doc: "how long to wait for the connection", Default: "10s"},
					},
				}},
			},
			{
				Type: "step", Labels: []string{"KIND", "NAME"}, Many: true,
				Doc: "an action and what must be observed before the plan moves on; KIND is run, launch, wait, assert or benchmark",
			},
		},
		Step: Block{
			Type:  "step",
			Attrs: stepAttrs(),
			Blocks: []Block{
				{Type: "probe", Labels: []string{"KIND", "NAME"}, Many: true, Doc: "observes state each evaluation: probe.NAME.ATTR"},
				condition("postcondition", "must hold before the plan moves on"),
				condition("abort_if", "fails the step at once when it holds"),
			},
		},
		Steps:     stepKinds(),
		Probes:    probeKinds(),
		Loads:     loadKinds(),
		Functions: functionDocs(),
	}
}

func functionDocs() []Func {
	return []Func{
		{"abs", "absolute value of a number"},
		{"base64encode", "encodes a string's bytes as base64 (an Authorization: Basic header)"},
		{"byhost", "a fleet step's outputs (a list, one per host) as a map by host name: byhost(step.launch.server)[\"n3\"].pid"},
		{"can", "true when its argument evaluates without error"},
		{"ceil", "smallest whole number not less than a number"},
		{"chomp", "removes trailing newlines"},
		{"coalesce", "first argument that is not null or empty"},
		{"coalescelist", "first list argument that is not empty"},
		{"compact", "removes empty strings from a list"},
		{"concat", "joins lists"},
		{"contains", "whether a list or set holds a value"},
		{"distinct", "removes duplicate list elements"},
		{"element", "list element at an index (wrapping around)"},
		{"endswith", "whether a string ends with a suffix"},
		{"flatten", "flattens nested lists"},
		{"floor", "largest whole number not greater than a number"},
		{"format", "printf-style formatting"},
		{"formatlist", "format applied to each element of lists"},
		{"indent", "indents every line but the first"},
		{"join", "joins a list of strings with a separator"},
		{"jsondecode", "parses JSON text into a value"},
		{"jsonencode", "encodes a value as JSON text"},
		{"keys", "the keys of a map or object"},
		{"length", "number of elements of a collection, or characters of a string"},
		{"lookup", "map element by key, with a default"},
		{"lower", "lower-cases a string"},
		{"max", "largest of numbers"},
		{"merge", "merges maps or objects"},
		{"min", "smallest of numbers"},
		{"parseint", "parses an integer in a base"},
		{"range", "a list of numbers"},
		{"regex", "the match of a pattern (its captures when it has any); an error when none"},
		{"regexall", "every match of a pattern"},
		{"replace", "replaces a substring"},
		{"reverse", "reverses a list"},
		{"shellquote", "quotes a value for a POSIX shell (single quotes)"},
		{"slice", "part of a list"},
		{"sort", "sorts a list of strings"},
		{"split", "splits a string on a separator"},
		{"startswith", "whether a string starts with a prefix"},
		{"strcontains", "whether a string contains a substring"},
		{"strlen", "number of characters of a string"},
		{"substr", "part of a string"},
		{"title", "capitalizes each word"},
		{"tobool", "converts to bool"},
		{"tolist", "converts to a list"},
		{"tomap", "converts to a map"},
		{"tonumber", "converts to a number (null stays null)"},
		{"toset", "converts to a set"},
		{"tostring", "converts to a string"},
		{"trim", "removes characters from both ends"},
		{"trimprefix", "removes a prefix"},
		{"trimspace", "removes white space from both ends"},
		{"trimsuffix", "removes a suffix"},
		{"try", "first argument that evaluates without error"},
		{"upper", "upper-cases a string"},
		{"values", "the values of a map or object"},
		{"zipmap", "a map from a list of keys and a list of values"},
	}
}
