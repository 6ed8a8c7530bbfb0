package plans

import "github.com/zclconf/go-cty/cty"

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
type Block struct {
	Type   string
	Labels []string // label names as docs show them, e.g. KIND, NAME
	Doc    string
	Attrs  []Attr
	Blocks []Block
	Many   bool // may appear more than once in its parent
}

// Attr describes an attribute.
type Attr struct {
	Name     string
	Doc      string
	Default  string // as docs show it; "" when there is none
	Required bool
	Const    bool // must be a constant: no references to anything
	// Type is what the value must convert to; cty.NilType when the
	// attribute is checked on its own (target, step, type, default) and
	// cty.DynamicPseudoType when any value will do.
	Type cty.Type
}

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
	// Confirms lists, in words, what the kind checks before the plan's
	// own postconditions.
	Confirms []string
}

// Output is a value a step or probe exposes to expressions.
type Output struct {
	Name string
	Type cty.Type // cty.DynamicPseudoType when it depends on the data
	Doc  string
}

// ProbeKind describes one kind of probe.
type ProbeKind struct {
	Name    string
	Doc     string
	Attrs   []Attr
	Outputs []Output
	// OneOf lists attributes of which exactly one must be set.
	OneOf []string
}

// LoadKind describes one kind of benchmark load.
type LoadKind struct {
	Name  string
	Doc   string
	Attrs []Attr
	// Metrics are the names of the numbers the load reports, as
	// self.metrics.NAME (and step.benchmark.NAME.metrics.NAME) read them;
	// validation rejects any other name. Some are there only when they
	// apply (the latency figures once a request has ended, tpot and itl
	// when streaming). With repeat = N (N > 1) each is an object of
	// values, median, min, max and stddev.
	Metrics []string
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
	str, num, boolean, dyn := cty.String, cty.Number, cty.Bool, cty.DynamicPseudoType
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
	actionAttrs := func(doc string) []Attr {
		return []Attr{
			{Name: "command", Type: str, Doc: doc, Required: true},
			{Name: "env", Type: strMap, Doc: "environment variables for the command, a map of strings", Default: "{}"},
			{Name: "workdir", Type: str, Doc: "directory the command runs in", Default: "the target's workdir"},
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
						{Name: "host", Type: str, Doc: "host name or ~/.ssh/config alias", Required: true},
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
			Type: "step",
			Attrs: []Attr{
				{Name: "target", Doc: "where the step runs: target.NAME", Default: "target.local"},
				{Name: "description", Type: str, Doc: "what the step is for", Const: true},
				{Name: "timeout", Type: str, Doc: "how long the postconditions may take to hold", Default: "per kind"},
				{Name: "interval", Type: str, Doc: "time between two evaluations of the probes and conditions", Default: "1s"},
				{Name: "always", Type: boolean, Doc: "run this step even after an earlier one failed (cleanup, reports)", Default: "false", Const: true},
				{Name: "keep", Type: boolean, Doc: "leave what this step launched, or what its command left running, running when the plan ends", Default: "false", Const: true},
				{Name: "progress", Type: num, Doc: "a number from 0 to 1 (or null) showing how far along the step is", Default: "null"},
			},
			Blocks: []Block{
				{Type: "probe", Labels: []string{"KIND", "NAME"}, Many: true, Doc: "observes state each evaluation: probe.NAME.ATTR"},
				condition("postcondition", "must hold before the plan moves on"),
				condition("abort_if", "fails the step at once when it holds"),
			},
		},
		Steps: []StepKind{
			{
				Name: "run", Doc: "runs a command to completion",
				Attrs:          actionAttrs("shell command run with /bin/sh -c"),
				DefaultTimeout: "10m", DefaultInterval: "1s",
				Self: []Output{
					{Name: "exit_code", Type: num, Doc: "the command's exit status"},
					{Name: "stdout", Type: str, Doc: "what the command wrote to standard output"},
					{Name: "stderr", Type: str, Doc: "what the command wrote to standard error"},
					{Name: "json", Type: dyn, Doc: "stdout parsed as JSON, null if it is not JSON"},
					{Name: "duration_ms", Type: num, Doc: "how long the command ran"},
				},
				Confirms: []string{"the command exits with status 0"},
			},
			{
				Name: "launch", Doc: "starts a long-running process, detached, its output written afresh to its log",
				Attrs: append(actionAttrs("shell command started detached with /bin/sh -c"),
					Attr{Name: "log", Type: str, Doc: "path of the process's log; an old file there is moved aside first", Default: "logs/NAME.log in the attempt's record (local), /tmp/lockstep/PLAN/NAME.log (ssh)"},
					Attr{Name: "grace", Type: str, Doc: "how long the process must stay alive to count as started", Default: "2s"},
					Attr{Name: "pidfile", Type: str, Doc: "where a daemonizing command's daemon writes its pid: the launch follows the process it names, once that is one of the launch's own", Default: "none: the daemon is the process the launch left running"},
				),
				DefaultTimeout: "2m", DefaultInterval: "250ms",
				Self: []Output{
					{Name: "pid", Type: num, Doc: "process id of the launched process, or of its daemon once it daemonized"},
					{Name: "pgid", Type: num, Doc: "its process group"},
					{Name: "daemonized", Type: boolean, Doc: "whether the command exited 0 leaving a daemon, which the launch now follows"},
					{Name: "alive", Type: boolean, Doc: "whether it is still running"},
					{Name: "log", Type: str, Doc: "the complete lines its process wrote to its own log since the launch"},
					{Name: "log_path", Type: str, Doc: "where the log is"},
					{Name: "command", Type: str, Doc: "the command as run"},
				},
				Confirms: []string{"a new process is started by this step", "it is still alive after the grace period"},
			},
			{
				Name: "wait", Doc: "takes no action: polls its probes until the postconditions hold",
				DefaultTimeout: "5m", DefaultInterval: "1s",
			},
			{
				Name: "assert", Doc: "takes no action: evaluates its probes and conditions once, or until timeout when one is given",
				DefaultTimeout: "", DefaultInterval: "1s",
			},
			{
				Name: "benchmark", Doc: "runs a load (or a command) and records its metrics",
				Attrs: append(actionAttrs("shell command whose output the metric blocks read"),
					Attr{Name: "repeat", Type: num, Doc: "run the load or command this many times; metrics then hold values, median, min, max, stddev", Default: "1", Const: true},
				),
				Blocks: []Block{
					{Type: "load", Labels: []string{"KIND"}, Doc: "generates load itself: http or openai"},
					{
						Type: "metric", Labels: []string{"NAME"}, Many: true,
						Doc: "a number read from the command's output: self.metrics.NAME",
						Attrs: []Attr{
							{Name: "regex", Type: str, Doc: "regular expression whose first capture group is the number", Const: true},
							{Name: "json", Type: dyn, Doc: "path into stdout parsed as JSON, e.g. results.throughput or items[0].value", Const: true},
						},
					},
				},
				DefaultTimeout: "1h", DefaultInterval: "1s",
				Self: []Output{
					{Name: "metrics", Type: dyn, Doc: "NAME -> number; with repeat, NAME -> {values, median, min, max, stddev}"},
					{Name: "exit_code", Type: num, Doc: "the command's exit status (0 for a load)"},
					{Name: "stdout", Type: str, Doc: "the command's standard output"},
				},
				Confirms: []string{"the load or command completes (a command with status 0)"},
			},
		},
		Probes: []ProbeKind{
			{
				Name: "exec", Doc: "runs a command on the target",
				Attrs: []Attr{
					{Name: "command", Type: str, Doc: "shell command run with /bin/sh -c", Required: true},
					{Name: "env", Type: strMap, Doc: "environment variables, a map of strings", Default: "{}"},
				},
				Outputs: []Output{
					{Name: "exit_code", Type: num, Doc: "exit status"},
					{Name: "stdout", Type: str, Doc: "standard output"},
					{Name: "stderr", Type: str, Doc: "standard error"},
					{Name: "json", Type: dyn, Doc: "stdout parsed as JSON, null if it is not JSON"},
				},
			},
			{
				Name: "http", Doc: "sends an HTTP request from the target's side",
				Attrs: []Attr{
					{Name: "url", Type: str, Doc: "URL; 127.0.0.1 is the target's loopback", Required: true},
					{Name: "method", Type: str, Doc: "HTTP method", Default: "GET"},
					{Name: "headers", Type: strMap, Doc: "request headers, a map of strings", Default: "{}"},
					{Name: "body", Type: str, Doc: "request body as text"},
					{Name: "json", Type: dyn, Doc: "request body as a value sent as JSON (sets Content-Type)"},
					{Name: "timeout", Type: str, Doc: "how long one request may take", Default: "10s"},
					{Name: "follow_redirects", Type: boolean, Doc: "follow redirects (up to 10) and report the last answer; otherwise the outputs are the first answer's", Default: "false"},
				},
				Outputs: []Output{
					{Name: "status", Type: num, Doc: "status code of the answer (a redirect's 301, 302... unless follow_redirects)"},
					{Name: "body", Type: str, Doc: "response body"},
					{Name: "json", Type: dyn, Doc: "response body parsed as JSON, null if it is not JSON"},
					{Name: "headers", Type: cty.Map(str), Doc: "response headers, names in lower case"},
					{Name: "location", Type: str, Doc: "the answer's Location header as sent (where a redirect points), \"\" when it has none"},
					{Name: "latency_ms", Type: num, Doc: "time to the full response"},
				},
			},
			{
				Name: "log", Doc: "reads what a log gained since the step (or the launch it names) began",
				Attrs: []Attr{
					{Name: "path", Type: str, Doc: "log file to follow, from this step's start"},
					{Name: "step", Doc: "step.launch.NAME: follow that launch's own log from its start"},
					{Name: "since", Doc: "step.launch.NAME: with path, read the file from that launch's start instead"},
				},
				OneOf: []string{"path", "step"},
				Outputs: []Output{
					{Name: "text", Type: str, Doc: "the complete lines read so far, as written"},
					{Name: "lines", Type: cty.List(str), Doc: "those lines, without their ends (a \\r redraw is a line)"},
					{Name: "last_line", Type: str, Doc: "the last complete line that is not blank"},
					{Name: "path", Type: str, Doc: "the file followed"},
				},
			},
			{
				Name: "process", Doc: "looks for processes on the target",
				Attrs: []Attr{
					{Name: "match", Type: str, Doc: "regular expression on the command line"},
					{Name: "pid", Type: num, Doc: "a process id"},
					{Name: "step", Doc: "step.launch.NAME: the process that launch started"},
				},
				OneOf: []string{"match", "pid", "step"},
				Outputs: []Output{
					{Name: "alive", Type: boolean, Doc: "whether any matching process runs"},
					{Name: "pids", Type: cty.List(num), Doc: "their process ids"},
					{Name: "count", Type: num, Doc: "how many there are"},
				},
			},
			{
				Name: "port", Doc: "checks a TCP port on the target",
				Attrs: []Attr{
					{Name: "port", Type: num, Doc: "TCP port number", Required: true},
					{Name: "host", Type: str, Doc: "address to connect to", Default: "127.0.0.1"},
				},
				Outputs: []Output{
					{Name: "open", Type: boolean, Doc: "whether a connection is accepted"},
					{Name: "pid", Type: num, Doc: "the listening process, null when unknown"},
					{Name: "pgid", Type: num, Doc: "the listening process's group: equal to step.launch.NAME.pgid when that launch (or a child of it) listens"},
					{Name: "pids", Type: cty.List(num), Doc: "every listening process"},
					{Name: "command", Type: str, Doc: "the listening process's command line"},
				},
			},
			{
				Name: "file", Doc: "looks at a file on the target",
				Attrs: []Attr{
					{Name: "path", Type: str, Doc: "file path", Required: true},
				},
				Outputs: []Output{
					{Name: "exists", Type: boolean, Doc: "whether the file exists"},
					{Name: "size", Type: num, Doc: "size in bytes"},
					{Name: "content", Type: str, Doc: "its content (up to 1 MiB)"},
					{Name: "sha256", Type: str, Doc: "hex SHA-256 of the content"},
				},
			},
			{
				Name: "gpu", Doc: "reads the GPUs' state with nvidia-smi",
				Outputs: []Output{
					{Name: "gpus", Type: dyn, Doc: "one object per GPU: index, name, memory_used_mib, memory_total_mib, utilization_percent, temperature_c"},
					{Name: "processes", Type: dyn, Doc: "one object per GPU process: gpu, pid, name, memory_used_mib"},
					{Name: "count", Type: num, Doc: "number of GPUs"},
				},
			},
		},
		Loads: []LoadKind{
			{
				Name: "http", Doc: "HTTP requests at a concurrency or a rate",
				Attrs: []Attr{
					{Name: "url", Type: str, Doc: "URL; 127.0.0.1 is the target's loopback", Required: true},
					{Name: "method", Type: str, Doc: "HTTP method", Default: "GET"},
					{Name: "headers", Type: strMap, Doc: "request headers", Default: "{}"},
					{Name: "body", Type: str, Doc: "request body"},
					{Name: "concurrency", Type: num, Doc: "requests in flight at once", Default: "1"},
					{Name: "rate", Type: num, Doc: "requests per second (open loop); unset means as fast as concurrency allows"},
					{Name: "duration", Type: str, Doc: "how long to send requests"},
					{Name: "requests", Type: num, Doc: "how many requests to send"},
					{Name: "warmup", Type: dyn, Doc: "time or requests not counted at the start"},
					{Name: "timeout", Type: str, Doc: "how long one request may take", Default: "30s"},
				},
				Metrics: httpLoadMetrics(),
			},
			{
				Name: "openai", Doc: "chat completions against an OpenAI-compatible server",
				Attrs: []Attr{
					{Name: "url", Type: str, Doc: "chat completions URL", Required: true},
					{Name: "model", Type: str, Doc: "model name sent in each request", Default: "default"},
					{Name: "stream", Type: boolean, Doc: "stream responses (needed for ttft and tpot)", Default: "true"},
					{Name: "concurrency", Type: num, Doc: "requests in flight at once", Default: "1"},
					{Name: "rate", Type: num, Doc: "requests per second (open loop)"},
					{Name: "requests", Type: num, Doc: "how many requests to send"},
					{Name: "duration", Type: str, Doc: "how long to send requests"},
					{Name: "warmup", Type: dyn, Doc: "requests not counted at the start"},
					{Name: "prompt_tokens", Type: num, Doc: "approximate length of generated prompts"},
					{Name: "prompts_file", Type: str, Doc: "file of prompts, one JSON string or messages list per line"},
					{Name: "max_tokens", Type: num, Doc: "max_tokens sent in each request"},
					{Name: "seed", Type: num, Doc: "seed for generated prompts"},
					{Name: "expect", Type: str, Doc: "regular expression every answer must match"},
					{Name: "ttft_limit_ms", Type: num, Doc: "count a request as failed when its first token takes longer"},
					{Name: "tpot_limit_ms", Type: num, Doc: "count a request as failed when its time per output token is longer"},
					{Name: "extra_body", Type: dyn, Doc: "fields merged into each request body"},
					{Name: "headers", Type: strMap, Doc: "request headers", Default: "{}"},
					{Name: "keep_requests", Type: boolean, Doc: "record each request and answer in the attempt", Default: "false"},
				},
				Metrics: openaiLoadMetrics(),
			},
		},
		Functions: functionDocs(),
	}
}

// httpLoadMetrics are the metrics load "http" reports (loads/http.go
// result, latencyMetrics in loads/loads.go).
func httpLoadMetrics() []string {
	return append([]string{
		"requests", "errors", "errors_connect", "errors_timeout", "errors_status_4xx", "errors_status_5xx",
		"errors_io", "errors_protocol", "bytes_received", "connections", "reconnects", "dropped", "late",
		"duration_s", "requests_per_s",
	}, suffixed([]string{"latency"}, "_p50_ms", "_p90_ms", "_p99_ms", "_p999_ms", "_max_ms", "_mean_ms")...)
}

// openaiLoadMetrics are the metrics load "openai" reports
// (loads/openai_metrics.go: answers_matching_share with expect, tpot and
// itl when streaming).
func openaiLoadMetrics() []string {
	return append([]string{
		"requests", "completed", "errors", "resent", "duration_s", "input_tokens", "output_tokens",
		"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s",
		"achieved_concurrency", "goodput_requests_per_s", "goodput_share", "answers_matching_share",
	}, suffixed([]string{"ttft", "e2e_latency", "tpot", "itl"}, "_mean_ms", "_median_ms", "_p99_ms")...)
}

// suffixed is every name with every suffix.
func suffixed(names []string, suffixes ...string) []string {
	var out []string
	for _, n := range names {
		for _, s := range suffixes {
			out = append(out, n+s)
		}
	}
	return out
}

func functionDocs() []Func {
	return []Func{
		{"abs", "absolute value of a number"},
		{"base64encode", "encodes a string's bytes as base64 (an Authorization: Basic header)"},
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
