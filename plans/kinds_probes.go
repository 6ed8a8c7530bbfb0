package plans

import "github.com/zclconf/go-cty/cty"

// probeKinds describes the probe kinds.
func probeKinds() []ProbeKind {
	str, num, boolean, dyn := cty.String, cty.Number, cty.Bool, cty.DynamicPseudoType
	strMap := cty.Map(cty.String)
	return []ProbeKind{
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
	}
}
