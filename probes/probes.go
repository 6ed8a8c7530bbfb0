package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/limits"
	"lockstep/schema"
	"lockstep/targets"
)

// Kind is one kind of probe: what plans documents and checks, and what
// the runner decodes a probe block into and makes.
type Kind struct {
	Name string
	Doc  string // one line: what the probe reads
	// Defaults returns a fresh config holding the kind's defaults, the
	// value a probe block is decoded onto (schema.DecodeChecked); its
	// struct tags are the kind's attributes (schema.Attrs).
	Defaults func() Config
	Outputs  []schema.Output
	// OneOf lists attributes of which exactly one must be set; the
	// config's Check checks it in the run, plans from the source.
	OneOf []string
}

// Kinds lists the probe kinds, in the order the docs show them. Adding a
// kind is adding its file and its line here.
func Kinds() []Kind {
	return []Kind{execKind(), httpKind(), logKind(), processKind(), portKind(), fileKind(), gpuKind()}
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Config is a probe kind's config struct, decoded from a probe block with
// schema.DecodeChecked in validate and in the run alike.
type Config interface {
	schema.Checker
	// Summary says in a few words what the probe does with this config
	// that its attributes as written do not say (a default that
	// applies, a setting worked out from others): what explain shows
	// beside its kind. "" when there is nothing to add.
	Summary() string
	// New makes the probe on target t. A log probe starts following
	// here: what it reads is what is written from now on (or since the
	// launch it names).
	New(ctx context.Context, t targets.Target, s Spec) (Probe, error)
}

// Spec is what the run gives a probe besides its config.
type Spec struct {
	Launch *Launch // the launch the block names with step = step.launch.NAME
	Since  *Launch // the launch the block names with since = step.launch.NAME
	// Reads names the outputs the step's expressions read; a probe may
	// skip gathering the others (they are null). Nil means all.
	Reads map[string]bool
	// HTTP is where an http probe takes its target's connections; nil
	// gives the probe a pool of its own, which nobody closes.
	HTTP *HTTPClients
}

// reads reports whether the step reads any of the outputs named.
func (s Spec) reads(outputs ...string) bool {
	if s.Reads == nil {
		return true
	}
	for _, o := range outputs {
		if s.Reads[o] {
			return true
		}
	}
	return false
}

// Launch is what a launch step left for later steps' probes to refer to.
type Launch struct {
	Addr string
	// Process is the launch's process as it stands when called: its
	// daemon once the launch was followed to one, which may be after the
	// probe was made.
	Process func() targets.Process
	Log     string
	// Marks are the files later log probes read with since = this launch,
	// as they were when it started, by Mark.
	Marks map[string]targets.FileInfo
}

// Mark is the key of Launch.Marks: a file on a target.
func Mark(target, path string) string { return target + "\x00" + path }

// Ref is a step or since attribute: the launch it names, by its address
// ("launch.server"). It is a reference, not a value, so plans reads it
// from the source; validate and the run both hand it on as that address,
// and Spec carries the launch itself.
type Ref string

func (r *Ref) CtyType() cty.Type { return cty.NilType }

func (r *Ref) SetCty(v cty.Value) error {
	if v.Type() != cty.String {
		return fmt.Errorf("must be step.launch.NAME")
	}
	*r = Ref(v.AsString())
	return nil
}

func (r *Ref) Show() string {
	if *r == "" {
		return ""
	}
	return "step." + string(*r)
}

var _ schema.Value = (*Ref)(nil)

// Probe reads one kind of state on a target. Observe returns the value the
// plan sees as probe.NAME, or an error meaning the state cannot be read yet
// (a refused connection, a missing file); the runner keeps that error as
// the reason a condition is not yet decided.
type Probe interface {
	Observe(ctx context.Context) (cty.Value, error)
}

// Following is implemented by probes that follow a file, so the runner can
// evaluate again as soon as it grows instead of at the next interval.
type Following interface {
	Follower() *Follower
}

// Leaving is a probe whose command may leave processes running (an exec
// probe's that backgrounds a job). It stops them itself once each
// observation's command has exited: a probe must not start processes.
type Leaving interface {
	// Left returns what the observations since the last call left
	// running, all stopped since, and the first error looking for them
	// or stopping them gave.
	Left() ([]targets.ProcessInfo, error)
}

// Permanent reports whether a probe's error cannot go away by waiting, so
// the step fails at once instead of counting it as "not yet".
func Permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// JSONValue turns JSON text into a plan value; text that is not JSON is null.
func JSONValue(data []byte) cty.Value {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || !json.Valid(data) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	if err := limits.CheckJSON(data); err != nil {
		// Too long a number or too deep a nesting to read in bounded
		// time: as unreadable as text that is not JSON.
		return cty.NullVal(cty.DynamicPseudoType)
	}
	ty, err := ctyjson.ImpliedType(data)
	if err != nil {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	v, err := ctyjson.Unmarshal(data, ty)
	if err != nil {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v
}

func stringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

func intList(ns []int) cty.Value {
	if len(ns) == 0 {
		return cty.ListValEmpty(cty.Number)
	}
	vs := make([]cty.Value, len(ns))
	for i, n := range ns {
		vs[i] = cty.NumberIntVal(int64(n))
	}
	return cty.ListVal(vs)
}
