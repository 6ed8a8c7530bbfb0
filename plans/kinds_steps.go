package plans

import "github.com/zclconf/go-cty/cty"

// stepKinds describes the step kinds.
func stepKinds(str, num, boolean, dyn cty.Type) []StepKind {
	strMap := cty.Map(cty.String)
	actionAttrs := func(doc string) []Attr {
		return []Attr{
			{Name: "command", Type: str, Doc: doc, Required: true},
			{Name: "env", Type: strMap, Doc: "environment variables for the command, a map of strings", Default: "{}"},
			{Name: "workdir", Type: str, Doc: "directory the command runs in", Default: "the target's workdir"},
		}
	}
	return []StepKind{
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
	}
}
