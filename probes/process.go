package probes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// Process is the process probe: it looks for processes on the target,
// by command line, by pid, or as the one a launch started. A zombie
// does not count: it has ended.
type Process struct {
	Match string `hcl:"match" doc:"regular expression on the command line"`
	PID   int    `hcl:"pid" doc:"a process id"`
	Step  Ref    `hcl:"step" doc:"step.launch.NAME: the process that launch started"`
}

// processDefaults is the process probe's config before its block is read.
func processDefaults() *Process { return &Process{} }

func (c *Process) oneOf() []string { return []string{"match", "pid", "step"} }

func processKind() Kind {
	num := cty.Number
	return Kind{
		Name: "process", Doc: "looks for processes on the target",
		Defaults: func() Config { return processDefaults() },
		OneOf:    processDefaults().oneOf(),
		Outputs: []schema.Output{
			{Name: "alive", Type: cty.Bool, Doc: "whether any matching process runs"},
			{Name: "pids", Type: cty.List(num), Doc: "their process ids"},
			{Name: "count", Type: num, Doc: "how many there are"},
		},
	}
}

func (c *Process) Check() error {
	errs := []error{schema.OneOf(c, c.oneOf()...)}
	if c.Match != "" {
		if _, err := regexp.Compile(c.Match); err != nil {
			errs = append(errs, &schema.AttrError{Attr: "match", Err: fmt.Errorf("is not a regular expression: %w", err)})
		}
	}
	if c.PID < 0 {
		errs = append(errs, &schema.AttrError{Attr: "pid", Err: fmt.Errorf("must be a process id, not %d", c.PID)})
	}
	return errors.Join(errs...)
}

// Summary: match, pid and step are shown as written.
func (c *Process) Summary() string { return "" }

func (c *Process) New(_ context.Context, t targets.Target, s Spec) (Probe, error) {
	p := &processProbe{t: t, match: c.Match, pid: c.PID, launch: s.Launch}
	if p.match == "" && p.pid == 0 && p.launch == nil {
		return nil, fmt.Errorf("a process probe needs match, pid or step")
	}
	return p, nil
}

type processProbe struct {
	t      targets.Target
	match  string
	pid    int
	launch *Launch
}

func (p *processProbe) Observe(ctx context.Context) (cty.Value, error) {
	var pids []int
	switch {
	case p.launch != nil:
		proc := p.launch.Process()
		st, err := p.t.Inspect(ctx, proc)
		if err != nil {
			return cty.NilVal, err
		}
		if st.Alive {
			pids = []int{proc.PID}
		}
	case p.pid != 0:
		ps, err := p.t.Processes(ctx, "")
		if err != nil {
			return cty.NilVal, err
		}
		for _, pi := range ps {
			if pi.PID == p.pid && pi.State != "Z" {
				pids = []int{p.pid}
			}
		}
	default:
		ps, err := p.t.Processes(ctx, p.match)
		if err != nil {
			return cty.NilVal, err
		}
		for _, pi := range ps {
			if pi.State != "Z" {
				pids = append(pids, pi.PID)
			}
		}
	}
	sort.Ints(pids)
	return cty.ObjectVal(map[string]cty.Value{
		"alive": cty.BoolVal(len(pids) > 0),
		"pids":  intList(pids),
		"count": cty.NumberIntVal(int64(len(pids))),
	}), nil
}
