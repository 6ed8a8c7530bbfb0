package probes

import (
	"context"
	"errors"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// Exec is the exec probe: it runs a command on the target each turn and
// reads how it ended and what it wrote.
type Exec struct {
	Command string            `hcl:"command,required" doc:"shell command run with /bin/sh -c"`
	Env     map[string]string `hcl:"env" doc:"environment variables, a map of strings"`
}

// execDefaults is the exec probe's config before its block is read: the
// target's environment and nothing added.
func execDefaults() *Exec { return &Exec{} }

func execKind() Kind {
	num, str := cty.Number, cty.String
	return Kind{
		Name: "exec", Doc: "runs a command on the target",
		Defaults: func() Config { return execDefaults() },
		Outputs: []schema.Output{
			{Name: "exit_code", Type: num, Doc: "exit status"},
			{Name: "stdout", Type: str, Doc: "standard output"},
			{Name: "stderr", Type: str, Doc: "standard error"},
			{Name: "json", Type: cty.DynamicPseudoType, Doc: "stdout parsed as JSON, null if it is not JSON"},
		},
	}
}

func (c *Exec) Check() error { return nil }

// Summary: the command and env are shown as written.
func (c *Exec) Summary() string { return "" }

func (c *Exec) New(_ context.Context, t targets.Target, _ Spec) (Probe, error) {
	return &execProbe{t: t, cmd: targets.Command{Line: c.Command, Env: c.Env}}, nil
}

type execProbe struct {
	t   targets.Target
	cmd targets.Command
	// left is what the observations since Left last asked left running,
	// stopped since; leftErr the first error looking or stopping gave.
	left    []targets.ProcessInfo
	leftErr error
}

var _ Leaving = (*execProbe)(nil)

// leftStopGrace is how long what a probe's command left running has
// between SIGTERM and SIGKILL.
const leftStopGrace = time.Second

// leftWait bounds the look for what a probe's command left, and its stop.
const leftWait = 10 * time.Second

func (p *execProbe) Observe(ctx context.Context) (cty.Value, error) {
	r, err := p.t.Run(ctx, p.cmd)
	p.stopLeft(ctx, r)
	if err != nil {
		return cty.NilVal, err
	}
	return CommandValue(r), nil
}

// stopLeft stops at once what the command of r left running, and keeps
// it for Left.
func (p *execProbe) stopLeft(ctx context.Context, r targets.Result) {
	if r.Mark == "" {
		return
	}
	owner := r.Owned()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leftWait)
	defer cancel()
	ms, err := targets.Leftovers(lctx, p.t, r)
	if err == nil && len(ms) > 0 {
		err = p.t.Stop(lctx, owner, leftStopGrace)
	}
	p.left = append(p.left, ms...)
	if p.leftErr == nil && !errors.Is(err, targets.ErrDisconnected) {
		// A dropped connection is the observation's error already.
		p.leftErr = err
	}
}

func (p *execProbe) Left() ([]targets.ProcessInfo, error) {
	ms, err := p.left, p.leftErr
	p.left, p.leftErr = nil, nil
	return ms, err
}

// CommandValue is a finished command as a plan sees it: an exec probe's
// value, and a run step's self.
func CommandValue(r targets.Result) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"exit_code":   cty.NumberIntVal(int64(r.ExitCode)),
		"stdout":      cty.StringVal(string(r.Stdout)),
		"stderr":      cty.StringVal(string(r.Stderr)),
		"json":        JSONValue(r.Stdout),
		"duration_ms": cty.NumberFloatVal(float64(r.Duration.Microseconds()) / 1000),
	})
}
