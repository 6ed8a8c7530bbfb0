package probes

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// Log is the log probe: it reads what a log gained since the step (or
// the launch it names) began. Its follower (follow.go) is the one the
// runner reads a launch's own log with.
type Log struct {
	Path  string `hcl:"path" doc:"log file to follow, from this step's start"`
	Step  Ref    `hcl:"step" doc:"step.launch.NAME: follow that launch's own log from its start"`
	Since Ref    `hcl:"since" doc:"step.launch.NAME: with path, read the file from that launch's start instead"`
}

// logDefaults is the log probe's config before its block is read.
func logDefaults() *Log { return &Log{} }

func (c *Log) oneOf() []string { return []string{"path", "step"} }

func logKind() Kind {
	str := cty.String
	return Kind{
		Name: "log", Doc: "reads what a log gained since the step (or the launch it names) began",
		Defaults: func() Config { return logDefaults() },
		OneOf:    logDefaults().oneOf(),
		Outputs: []schema.Output{
			{Name: "text", Type: str, Doc: "the complete lines read so far, as written"},
			{Name: "lines", Type: cty.List(str), Doc: "those lines, without their ends (a \\r redraw is a line)"},
			{Name: "last_line", Type: str, Doc: "the last complete line that is not blank"},
			{Name: "path", Type: str, Doc: "the file followed"},
		},
	}
}

func (c *Log) Check() error { return schema.OneOf(c, c.oneOf()...) }

// Summary says where reading starts for a path read from the step's own
// start; explain names the launch of step and since itself.
func (c *Log) Summary() string {
	if c.Path != "" && c.Since == "" {
		return "from this step's start"
	}
	return ""
}

func (c *Log) New(ctx context.Context, t targets.Target, s Spec) (Probe, error) {
	p := &logProbe{text: s.reads("text"), lines: s.reads("lines")}
	if s.Launch != nil {
		p.f = FollowLaunch(t, s.Launch.Process(), 0)
		return p, nil
	}
	if c.Path == "" {
		return nil, fmt.Errorf("a log probe needs path or step")
	}
	if l := s.Since; l != nil {
		fi, ok := l.Marks[Mark(t.Name(), c.Path)]
		switch {
		case !ok:
			return nil, fmt.Errorf("since = step.%s: the state of %s was not recorded when that launch started (the path could not be known then, or its target not reached); drop since to read from this step's start", l.Addr, c.Path)
		case !fi.Exists:
			p.f = FollowStart(t, c.Path) // made after the launch started
		default:
			p.f = FollowAt(t, c.Path, fi.ID, fi.Size)
		}
		return p, nil
	}
	var err error
	if p.f, err = FollowFrom(ctx, t, c.Path); err != nil {
		return nil, err
	}
	return p, nil
}

type logProbe struct {
	f *Follower
	// What the step reads of the log: the text and its lines cost a copy
	// of up to 8 MiB (and a value per line) each time they are made.
	text, lines bool
	// val is the log as of read bytes of f: made again only when it grew.
	val  cty.Value
	read int64
}

func (p *logProbe) Follower() *Follower { return p.f }

func (p *logProbe) Observe(ctx context.Context) (cty.Value, error) {
	if _, err := p.f.Poll(ctx); err != nil {
		return cty.NilVal, err
	}
	if n := p.f.Read(); p.val == cty.NilVal || n != p.read {
		p.val, p.read = p.value(), n
	}
	return p.val, nil
}

// value is the followed log as the plan sees it; what the step does not
// read is null.
func (p *logProbe) value() cty.Value {
	text, lines := cty.NullVal(cty.String), cty.NullVal(cty.List(cty.String))
	if p.text {
		text = cty.StringVal(p.f.Text())
	}
	if p.lines {
		lines = stringList(p.f.Lines())
	}
	return cty.ObjectVal(map[string]cty.Value{
		"text":      text,
		"lines":     lines,
		"last_line": cty.StringVal(p.f.LastLine()),
		"path":      cty.StringVal(p.f.Path()),
	})
}
