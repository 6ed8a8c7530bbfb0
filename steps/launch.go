package steps

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/runner/events"
	"lockstep/schema"
)

// LaunchConfig is a launch step: a long-running process started
// detached, its output written afresh to its log.
type LaunchConfig struct {
	Common
	Command string `hcl:"command,required" doc:"shell command started detached with /bin/sh -c"`
	commandAttrs
	Log     string   `hcl:"log" doc:"path of the process's log; an old file there is moved aside first" default:"logs/NAME.log in the attempt's record (local), /tmp/lockstep/PLAN/NAME.log (ssh)"`
	Grace   Duration `hcl:"grace" doc:"how long the process must stay alive to count as started"`
	Pidfile string   `hcl:"pidfile" doc:"where a daemonizing command's daemon writes its pid: the launch follows the process it names, once that is one of the launch's own" default:"none: the daemon is the process the launch left running"`
	Adopt   bool     `hcl:"adopt" doc:"in a full run, when a process an earlier attempt of this plan launched here and kept still runs (it holds a port the plan names), adopt it instead of starting a second one: its pid and start time checked, its config proof re-checked on its log from its start; otherwise the run says so and launches"`
}

func launchKind() Kind {
	return Kind{
		Name: "launch", Doc: "starts a long-running process, detached, its output written afresh to its log",
		Defaults: func() Config {
			return &LaunchConfig{Common: common(2*time.Minute, 250*time.Millisecond), Grace: Duration(2 * time.Second)}
		},
		Self: []schema.Output{
			{Name: "pid", Type: cty.Number, Doc: "process id of the launched process, or of its daemon once it daemonized"},
			{Name: "pgid", Type: cty.Number, Doc: "its process group"},
			{Name: "daemonized", Type: cty.Bool, Doc: "whether the command exited 0 leaving a daemon, which the launch now follows"},
			{Name: "alive", Type: cty.Bool, Doc: "whether it is still running"},
			{Name: "log", Type: cty.String, Doc: "the complete lines its process wrote to its own log since the launch"},
			{Name: "log_path", Type: cty.String, Doc: "where the log is"},
			{Name: "command", Type: cty.String, Doc: "the command as run"},
			{Name: "adopted_from", Type: cty.Number, Doc: "the attempt whose process this launch adopted (a run --from a later step, or adopt = true); 0 when it started its own"},
		},
		Confirms: []string{"a new process is started by this step", "it is still alive after the grace period"},
		Elsewhere: map[string]string{
			"log":     "To read a log here, add a probe \"log\" block.",
			"pidfile": "Only a launch follows a daemon through its pid file.",
			"grace":   "Only a launch has a process to watch through a grace period.",
		},
		Launches: true,
		Explain: Explain{Command: "Starts", Attrs: []ExplainAttr{
			{Name: "log", Label: "Log", Absent: "a fresh file under .lockstep/"},
			{Name: "pidfile", Label: "Follows the daemon named in"},
		}},
	}
}

func (*LaunchConfig) Check() error { return nil }

func (*LaunchConfig) Static(s Shape) hcl.Diagnostics { return needsCommand("launch", "starts", s) }

func (*LaunchConfig) ConfirmsFor(Shape) []string { return launchKind().Confirms }

func (*LaunchConfig) Once() bool { return false }

// Conditions: a new process started (the action failed the step
// otherwise), and it is alive once its grace period has passed.
func (c *LaunchConfig) Conditions(o Observed) []events.Condition {
	grace := time.Duration(c.Grace)
	started := events.Condition{Kind: "default", Source: "a new process started by this step", State: events.CondHeld}
	alive := events.Condition{Kind: "default", Source: fmt.Sprintf("the process is alive after its grace period (%s)", grace), State: events.CondHeld}
	if o.Following != "" {
		alive.State, alive.Reason = events.CondNotYet, o.Following
	} else if a := o.Self["alive"]; a == cty.NilVal || !a.IsKnown() || a.IsNull() || !a.True() {
		alive.State, alive.Reason = events.CondFalse, "the process is not running"
	} else if o.Elapsed < grace {
		alive.State, alive.Reason = events.CondNotYet, fmt.Sprintf("alive, within its grace period (%s)", grace)
	}
	return []events.Condition{started, alive}
}

func (*LaunchConfig) Act(a Actor) bool { return a.Launch() }
