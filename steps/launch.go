package steps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/targets"
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
			{Name: "adopt", Label: "Adopts a server an earlier attempt kept on the plan's port"},
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
	} else if a := o.Self["alive"]; a != cty.NilVal && !a.IsKnown() {
		alive.State, alive.Reason = events.CondNotYet, "its process could not be looked at"
	} else if a == cty.NilVal || a.IsNull() || !a.True() {
		alive.State, alive.Reason = events.CondFalse, "the process is not running"
	} else if o.Elapsed < grace {
		alive.State, alive.Reason = events.CondNotYet, fmt.Sprintf("alive, within its grace period (%s)", grace)
	}
	return []events.Condition{started, alive}
}

// Act starts the command, detached, writing a log of its own, and makes
// it the step's launch: watched until the run ends, its log followed
// (self.log).
func (c *LaunchConfig) Act(ctx context.Context, env Env) error {
	shown, err := env.Shown("command")
	if err != nil {
		return err
	}
	shownLog, err := env.Shown("log")
	if err != nil {
		return err
	}
	logPath := c.Log
	if logPath == "" {
		logPath = filepath.Join(env.LogDir(), env.Name()+".log")
		shownLog = logPath
	}
	if adopted, err := env.Adopt(ctx); adopted || err != nil {
		return err
	}
	marks := sinceMarks(ctx, env)
	t := env.Target()
	// The one place the process comes into being; from here on the
	// action watches it, follows its log and tells of it.
	moved, proc, err := startFresh(ctx, t, c.cmd(c.Command), logPath)
	if err != nil {
		return fmt.Errorf("starting %q: %w", shown, err)
	}
	l := Launched{Process: proc, Pidfile: c.Pidfile, Marks: marks}
	logVal := cty.StringVal(logPath)
	if shownLog != logPath {
		l.ShownLog = shownLog
		logVal = env.Sensitive(logVal)
		moved = env.Redact(moved)
	}
	env.Watch(l)
	env.Follow(probes.FollowLaunch(t, proc, 0))
	err = env.SetSelf(map[string]cty.Value{
		"pid":        cty.NumberIntVal(int64(proc.PID)),
		"pgid":       cty.NumberIntVal(int64(proc.PGID)),
		"log_path":   logVal,
		"command":    cty.StringVal(shown),
		"alive":      cty.True,
		"daemonized": cty.False,
	})
	if err != nil {
		return err
	}
	env.Emit(events.Action{Command: shown, PID: proc.PID, PGID: proc.PGID, Log: shownLog, MovedLog: moved})
	return nil
}

// sinceMarks notes, before this launch starts, the files that later log
// probes read with since = this launch: their size and identity now, so
// those probes read what the files gained from here on (rotations
// included). A file that cannot be looked at now is left out: the probe
// then says so.
func sinceMarks(ctx context.Context, env Env) map[string]targets.FileInfo {
	marks := map[string]targets.FileInfo{}
	for _, f := range env.SinceFiles() {
		if fi, err := f.Target.Stat(ctx, f.Path); err == nil {
			marks[probes.Mark(f.Target.Name(), f.Path)] = fi
		}
	}
	return marks
}

// startTries bounds how often a launch moves a log aside and starts again
// because another launch created a new log at the path in between.
const startTries = 5

// startFresh moves an old log aside and starts the launch with a log of its
// own: Start creates the file and refuses one that exists, so when
// another launch (a second attempt at once) made one after the move, it
// is moved aside too (that launch follows its file by identity, not by
// name) and the start tried again. moved is the first file moved aside.
func startFresh(ctx context.Context, t targets.Target, cmd targets.Command, logPath string) (moved string, proc targets.Process, err error) {
	for try := 1; ; try++ {
		m, err := t.MoveAside(ctx, logPath)
		if err != nil {
			return moved, proc, fmt.Errorf("moving the old log aside: %w", err)
		}
		moved = cmp.Or(moved, m)
		proc, err = t.Start(ctx, cmd, logPath)
		if errors.Is(err, fs.ErrExist) && try < startTries {
			continue
		}
		return moved, proc, err
	}
}
