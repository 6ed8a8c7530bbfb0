package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/targets"
)

// Kind is one kind of step: its name and doc, the config it decodes a
// step's attributes into (Defaults), its self outputs and blocks, and
// what it says of the attributes it does not take. The rest of what a
// kind does is on its config (Config). Kinds lists them all.
type Kind struct {
	Name string
	Doc  string
	// Defaults returns a fresh config holding the kind's defaults; a
	// step's attributes are decoded into it (Decode). It is the one place
	// a default is declared: the docs, validate, explain and the run all
	// read it.
	Defaults func() Config
	Self     []schema.Output
	Blocks   []schema.Block // besides those of every step (probe, postcondition, abort_if)
	// Confirms lists, in words, what the kind checks before the plan's
	// own postconditions, whatever the step holds (ConfirmsFor says it
	// for one step).
	Confirms []string
	// Refusals says, for an attribute of another kind set on a step of
	// this one, what to write instead.
	Refusals map[string]string
	// Elsewhere says, for an attribute of this kind set on a step of
	// another, why it is this kind's.
	Elsewhere map[string]string
	// Launches says that the kind starts a process other steps' probes
	// can name with step = step.KIND.NAME.
	Launches bool
	// Explain is how explain words the kind's action.
	Explain Explain
}

// Explain is how explain words a kind's action, as data for the views:
// the label of its command, or what it does without one.
type Explain struct {
	Command  string // "Runs", "Starts"
	NoAction string // "none: polls its probes and conditions"
	// Attrs are the kind's own attributes explain tells after the
	// command, in order.
	Attrs []ExplainAttr
}

// ExplainAttr is how explain tells one of a kind's attributes: its label,
// and what to say when the step leaves it out ("" to say nothing).
type ExplainAttr struct {
	Name, Label, Absent string
}

// Kinds returns the step kinds, in the order docs list them. Each call
// builds them afresh.
func Kinds() []Kind {
	makers := kindMakers()
	out := make([]Kind, 0, len(makers))
	for _, mk := range makers {
		out = append(out, mk())
	}
	return out
}

// kindMakers are what build the step kinds, in the order docs list them.
func kindMakers() [5]func() Kind {
	return [...]func() Kind{runKind, launchKind, waitKind, assertKind, benchmarkKind}
}

// Lookup returns the kind named name, built afresh. It builds the kinds
// one at a time up to that one, not all of them: the runner looks up
// every step's kind, and a run step's is the first.
func Lookup(name string) (Kind, bool) {
	for _, mk := range kindMakers() {
		if k := mk(); k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Decode decodes a step's attribute values (keyed by name; target as the
// target's name) into a fresh config of the kind, with the decoder
// validate uses (schema.DecodeChecked): what validates runs.
func (k Kind) Decode(vals map[string]cty.Value) (Config, error) {
	cfg := k.Defaults()
	return cfg, schema.DecodeChecked(vals, cfg)
}

// Hint is what to tell a user who set attr, which kind k does not take:
// k's own word on it, else that of the kind attr belongs to.
func (k Kind) Hint(attr string) string {
	if h, ok := k.Refusals[attr]; ok {
		return h
	}
	for _, o := range Kinds() {
		if h, ok := o.Elsewhere[attr]; ok {
			return h
		}
	}
	return ""
}

// Config is a step's decoded attributes, of one kind: a pointer to the
// kind's config struct, which embeds Common.
type Config interface {
	schema.Checker
	// Step is what every step has.
	Step() *Common
	// Static checks what the step holds (Shape), not the attributes'
	// values: a command missing, a load beside a command. It keeps
	// nothing of s: the check of a plan reuses s.Blocks for the next
	// step.
	Static(s Shape) hcl.Diagnostics
	// ConfirmsFor says in words what the kind checks on its own before
	// the plan's postconditions, for a step that holds s.
	ConfirmsFor(s Shape) []string
	// Once says that the step's conditions are evaluated once, not
	// polled until they hold.
	Once() bool
	// Conditions are the kind's own checks, judged on what the step
	// observed this turn.
	Conditions(o Observed) []events.Condition
	// Act does the kind's action, in the run env: nil goes on to the
	// confirm loop, an error ends the step (Env says how).
	Act(ctx context.Context, env Env) error
}

// Common is what every step has, whatever its kind. Timeout and interval
// default per kind: each kind's Defaults sets them.
type Common struct {
	Target      TargetName `hcl:"target" doc:"where the step runs: target.NAME"`
	Description string     `hcl:"description,const" doc:"what the step is for"`
	Timeout     Period     `hcl:"timeout" doc:"how long the postconditions may take to hold" default:"per kind"`
	Interval    Period     `hcl:"interval" doc:"time between two evaluations of the probes and conditions" default:"per kind"`
	Always      bool       `hcl:"always,const" doc:"run this step even after an earlier one failed (cleanup, reports)"`
	Keep        bool       `hcl:"keep,const" doc:"leave what this step launched, or what its command left running, running when the plan ends"`
	Progress    Progress   `hcl:"progress" doc:"a number from 0 to 1 (or null) showing how far along the step is"`
	// Fleet is how a step on many hosts decides (fleet.go).
	Fleet
}

// Step is what every step has.
func (c *Common) Step() *Common { return c }

// common is what every step has, with the kind's timeout and interval.
func common(timeout, interval time.Duration) Common {
	return Common{Target: "local", Timeout: Period(timeout), Interval: Period(interval)}
}

// Shape is what a kind's static checks see of a step: which attributes
// and blocks it has, and where.
type Shape struct {
	Decl hcl.Range
	// Attrs are the attributes set, by name: the step's own, not a copy.
	Attrs map[string]hcl.Expression
	// Blocks are the step's blocks in file order (a block that did not
	// decode too, at Decl).
	Blocks []Part
	// Misspelled names what an unknown attribute or block looks like: a
	// check does not say it is missing too.
	Misspelled map[string]bool
}

// Part is a block of a step: postcondition, load "http", metric "rps".
type Part struct {
	Type, Label string
	Range       hcl.Range
}

// Has says whether the step sets the attribute or has a block of type
// name, or seems to and misspelled it.
func (s Shape) Has(name string) bool {
	if _, ok := s.Attrs[name]; ok || s.Misspelled[name] {
		return true
	}
	return slices.ContainsFunc(s.Blocks, func(p Part) bool { return p.Type == name })
}

// Parts are the step's blocks of type typ.
func (s Shape) Parts(typ string) []Part {
	var out []Part
	for _, p := range s.Blocks {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}

func problem(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// Observed is what a kind's own conditions judge, each turn.
type Observed struct {
	Self map[string]cty.Value
	// ReadsSelf says whether the plan's postconditions read self.NAME.
	ReadsSelf func(name string) bool
	// Following says why a launch is neither alive nor dead: its command
	// exited 0 and the daemon it left is being made sure of.
	Following string
	Elapsed   time.Duration // since the step started
}

// TargetName is a step's target, which a plan writes as target.NAME:
// validate reads the reference, and the decoder is given the name.
type TargetName string

func (*TargetName) CtyType() cty.Type { return cty.NilType }
func (t *TargetName) Show() string    { return "target." + string(*t) }
func (t *TargetName) SetCty(v cty.Value) error {
	if v.Type() != cty.String {
		return errors.New("must be a reference to a target block: target.NAME")
	}
	*t = TargetName(v.AsString())
	return nil
}

// Progress is the last value of a step's progress expression, which is
// evaluated on every turn: a number from 0 to 1, or null.
type Progress struct {
	Value *float64
}

func (*Progress) CtyType() cty.Type { return cty.Number }
func (p *Progress) Show() string {
	if p.Value == nil {
		return "null"
	}
	return strconv.FormatFloat(*p.Value, 'f', -1, 64)
}
func (p *Progress) SetCty(v cty.Value) error {
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return fmt.Errorf("must be a number from 0 to 1, or null, not %s", v.Type().FriendlyName())
	}
	f, _ := n.AsBigFloat().Float64()
	p.Value = &f
	return nil
}

// Period is a duration that must be longer than zero (timeout, interval);
// a kind's default may be zero (an assert's timeout: check once).
type Period time.Duration

func (*Period) CtyType() cty.Type { return cty.String }
func (p *Period) Show() string    { return schema.ShowDuration(time.Duration(*p)) }
func (p *Period) SetCty(v cty.Value) error {
	d, err := DurationOf(v, true)
	*p = Period(d)
	return err
}

// Duration is a duration that may be zero (grace).
type Duration time.Duration

func (*Duration) CtyType() cty.Type { return cty.String }
func (d *Duration) Show() string    { return schema.ShowDuration(time.Duration(*d)) }
func (d *Duration) SetCty(v cty.Value) error {
	n, err := DurationOf(v, false)
	*d = Duration(n)
	return err
}

// DurationOf reads a duration as a plan writes one ("500ms", "90s",
// "5m", "1h30m"); positive refuses zero. Its errors are *schema.Invalid,
// told as "Invalid duration", to follow the attribute's name unless they
// name what they are about themselves.
func DurationOf(v cty.Value, positive bool) (time.Duration, error) {
	v, _ = v.Unmark()
	invalid := func(whole bool, format string, args ...any) error {
		return &schema.Invalid{Summary: "Invalid duration", Err: fmt.Errorf(format, args...), Whole: whole}
	}
	if v.IsNull() || !v.IsKnown() {
		return 0, invalid(false, "has no value. Write a duration such as \"90s\", \"5m\" or \"1h30m\"")
	}
	if v.Type() != cty.String {
		return 0, invalid(false, "must be a string such as \"90s\", \"5m\" or \"1h30m\", not a %s", v.Type().FriendlyName())
	}
	s := v.AsString()
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, invalid(true, "%q is not a duration. Write a number with a unit, as Go reads durations: \"500ms\", \"90s\", \"5m\", \"1h30m\" (there is no \"d\": write \"24h\")", s)
	case positive && d <= 0:
		return 0, invalid(false, "must be longer than zero, not %q", s)
	case d < 0:
		return 0, invalid(false, "cannot be negative (%q)", s)
	}
	return d, nil
}

// article is the indefinite article of a kind's name: "a run", "an assert".
func article(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'e' || word[0] == 'i' || word[0] == 'o' || word[0] == 'u') {
		return "An"
	}
	return "A"
}

// commandAttrs are the attributes of a kind that runs a command.
type commandAttrs struct {
	Env     map[string]string `hcl:"env" doc:"environment variables for the command, a map of strings"`
	Workdir string            `hcl:"workdir" doc:"directory the command runs in" default:"the target's workdir"`
}

// cmd is the command a kind runs: its line as decoded, with env and
// workdir.
func (a commandAttrs) cmd(line string) targets.Command {
	return targets.Command{Line: line, Env: a.Env, Dir: a.Workdir}
}

// noCommand is what a kind that runs no command says of the attributes
// of one.
func noCommand(kind string) map[string]string {
	env := "A " + kind + " step runs no command; set env on a probe \"exec\" block or on the target."
	return map[string]string{
		"command": "To run a command while checking, add a probe \"exec\" block; to run it as an action, make this a run step.",
		"env":     env,
		"workdir": env,
	}
}
