package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// Port is the port probe: it connects to a TCP port from the target's
// side and, when the step reads it, finds who listens.
type Port struct {
	Port int    `hcl:"port,required" doc:"TCP port number"`
	Host string `hcl:"host" doc:"address to connect to"`
}

// portDefaults is the port probe's config before its block is read.
func portDefaults() *Port { return &Port{Host: "127.0.0.1"} }

func portKind() Kind {
	num := cty.Number
	return Kind{
		Name: "port", Doc: "checks a TCP port on the target",
		Defaults: func() Config { return portDefaults() },
		Outputs: []schema.Output{
			{Name: "open", Type: cty.Bool, Doc: "whether a connection is accepted"},
			{Name: "pid", Type: num, Doc: "the listening process, null when unknown"},
			{Name: "pgid", Type: num, Doc: "the listening process's group: equal to step.launch.NAME.pgid when that launch (or a child of it) listens"},
			{Name: "pids", Type: cty.List(num), Doc: "every listening process"},
			{Name: "command", Type: cty.String, Doc: "the listening process's command line"},
		},
	}
}

// dialTimeout bounds one connection attempt.
const dialTimeout = 2 * time.Second

// Check faults a port out of range; 0, the value before the block is
// read, is the run's to fault (port is required).
func (c *Port) Check() error {
	if c.Port < 0 || c.Port > 65535 {
		return &schema.AttrError{Attr: "port", Err: fmt.Errorf("must be from 1 to 65535, not %d", c.Port)}
	}
	return nil
}

// Summary gives the address connected to.
func (c *Port) Summary() string { return "connects to " + c.Host }

func (c *Port) New(_ context.Context, t targets.Target, s Spec) (Probe, error) {
	if c.Port == 0 {
		return nil, fmt.Errorf("port must be from 1 to 65535, not 0")
	}
	return &portProbe{t: t, host: c.Host, port: c.Port, owners: s.reads("pid", "pgid", "pids", "command")}, nil
}

type portProbe struct {
	t    targets.Target
	host string
	port int
	// owners is whether the step reads who listens: finding out scans
	// every process's descriptors, which costs far more than the dial.
	owners bool
}

func (p *portProbe) Observe(ctx context.Context) (cty.Value, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	conn, dialErr := p.t.Dial(dctx, "tcp", net.JoinHostPort(p.host, strconv.Itoa(p.port)))
	cancel()
	if dialErr == nil {
		conn.Close()
	} else if errors.Is(dialErr, targets.ErrDisconnected) {
		return cty.NilVal, dialErr
	}
	var ls []targets.Listener
	if p.owners {
		var err error
		if ls, err = p.t.Listeners(ctx, p.port); err != nil {
			return cty.NilVal, err
		}
	}
	var pids []int
	var first *targets.Listener
	seen := map[int]bool{}
	for i, l := range ls {
		if l.PID != 0 && !seen[l.PID] {
			seen[l.PID] = true
			pids = append(pids, l.PID)
			if first == nil {
				first = &ls[i]
			}
		}
	}
	pid, pgid, command := cty.NullVal(cty.Number), cty.NullVal(cty.Number), cty.NullVal(cty.String)
	if first != nil {
		pid, command = cty.NumberIntVal(int64(first.PID)), cty.StringVal(first.Command)
		pgid = cty.NumberIntVal(int64(first.PGID))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"open":    cty.BoolVal(dialErr == nil),
		"pid":     pid,
		"pgid":    pgid,
		"pids":    intList(pids),
		"command": command,
	}), nil
}
