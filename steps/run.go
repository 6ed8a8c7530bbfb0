package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/targets"
)

// RunConfig is a run step: a command run to completion.
type RunConfig struct {
	Common
	Command string `hcl:"command,required" doc:"shell command run with /bin/sh -c"`
	commandAttrs
}

func runKind() Kind {
	return Kind{
		Name: "run", Doc: "runs a command to completion",
		Defaults: func() Config { return &RunConfig{Common: common(10*time.Minute, time.Second)} },
		Self:     commandSelf(),
		Confirms: []string{"the command exits with status 0"},
		Explain:  Explain{Command: "Runs"},
	}
}

// commandSelf is self of a step whose command ran to completion.
func commandSelf() []schema.Output {
	return []schema.Output{
		{Name: "exit_code", Type: cty.Number, Doc: "the command's exit status"},
		{Name: "stdout", Type: cty.String, Doc: "what the command wrote to standard output"},
		{Name: "stderr", Type: cty.String, Doc: "what the command wrote to standard error"},
		{Name: "json", Type: cty.DynamicPseudoType, Doc: "stdout parsed as JSON, null if it is not JSON"},
		{Name: "duration_ms", Type: cty.Number, Doc: "how long the command ran"},
	}
}

func (*RunConfig) Check() error { return nil }

func (*RunConfig) Static(s Shape) hcl.Diagnostics {
	return needsCommand("run", "runs to completion", s)
}

// needsCommand is the check of a kind whose action is its command.
func needsCommand(kind, does string, s Shape) hcl.Diagnostics {
	if s.Has("command") {
		return nil
	}
	return hcl.Diagnostics{problem("Missing command",
		fmt.Sprintf("%s %s step needs command = \"...\", the shell command it %s.", article(kind), kind, does), s.Decl)}
}

func (*RunConfig) ConfirmsFor(Shape) []string { return runKind().Confirms }

func (*RunConfig) Once() bool { return true }

// Conditions: the command exited 0, unless the plan's own conditions
// read self.exit_code (then they judge it).
func (*RunConfig) Conditions(o Observed) []events.Condition { return exitedZero(o) }

func exitedZero(o Observed) []events.Condition {
	if o.ReadsSelf != nil && o.ReadsSelf("exit_code") {
		return nil
	}
	code := o.Self["exit_code"]
	c := events.Condition{Kind: "default", Source: "self.exit_code == 0", State: events.CondHeld}
	if code == cty.NilVal || code.IsNull() || !code.IsKnown() || !code.Equals(cty.Zero).True() {
		c.State = events.CondFalse
		c.Reason = "the command exited with status " + showCode(code)
	}
	return []events.Condition{c}
}

// showCode is an exit code as a reason tells it (as the runner renders
// values).
func showCode(v cty.Value) string {
	switch {
	case v == cty.NilVal:
		return "(none)"
	case !v.IsKnown():
		return "(not known yet)"
	case v.IsNull():
		return "null"
	}
	return v.AsBigFloat().Text('g', 10)
}

// Act runs the command to completion: self is its exit code and output.
func (c *RunConfig) Act(ctx context.Context, env Env) error {
	shown, err := env.Shown("command")
	if err != nil {
		return err
	}
	_, err = runCommand(ctx, env, c.cmd(c.Command), shown)
	return err
}

// runCommand runs a step's command (shown as shown) to completion,
// tells of it, and keeps its exit code and output as self. The error
// ends the step: cut short, the target failed, or an output beyond the
// plan's limits.
func runCommand(ctx context.Context, env Env, cmd targets.Command, shown string) (targets.Result, error) {
	env.Emit(events.Action{Command: shown})
	res, err := env.Target().Run(ctx, cmd)
	// What it wrote is evidence should the step fail, also when the
	// command was cut short; what it left running is told after how it
	// ended, and looked for however it ended.
	defer env.Ran(ctx, res)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		return res, err
	}
	if err := env.SetSelf(probes.CommandValue(res).AsValueMap()); err != nil {
		return res, &Failure{Reason: "the command's output is beyond a limit: " + err.Error()}
	}
	code := res.ExitCode
	// The command was shown as it started: this says only how it ended.
	env.Emit(events.Action{ExitCode: &code})
	return res, nil
}
