package plans

import (
	"fmt"
	"slices"
	"strings"
)

// StepMode is what a run of part of a plan (--from, --only) does with a
// step. The zero value runs it.
type StepMode int

const (
	// RunStep acts and confirms, as a full run does.
	RunStep StepMode = iota
	// Reconfirm takes no action: the step's conditions are evaluated on
	// what is there now (a launch adopts the process an earlier attempt
	// left running).
	Reconfirm
	// Leave is not run at all: --only does not name it and no step it
	// names reads it.
	Leave
)

// Part is the part of a plan a run runs: each step's mode, by address.
type Part struct {
	From  string   // the step --from named, as its address
	Only  []string // the steps --only named, as their addresses
	Modes map[string]StepMode
}

// Whole says the run is of the whole plan.
func (p Part) Whole() bool { return p.From == "" && len(p.Only) == 0 }

// Mode is the step's mode in the part.
func (p Part) Mode(addr string) StepMode { return p.Modes[addr] }

// Reconfirmed lists the steps re-confirmed, in plan order.
func (p Part) Reconfirmed(pl *Plan) []string {
	var out []string
	for _, st := range pl.Steps {
		if p.Modes[st.Addr()] == Reconfirm {
			out = append(out, st.Addr())
		}
	}
	return out
}

// StepNamed finds the step a user names on the command line: KIND.NAME,
// or NAME where one step has it. The error says what would: a did-you-mean,
// or the addresses a shared name stands for.
func (pl *Plan) StepNamed(name string) (*Step, error) {
	var addrs []string
	var byName []*Step
	for _, st := range pl.Steps {
		if st.Addr() == name {
			return st, nil
		}
		if st.Name == name {
			byName = append(byName, st)
		}
		addrs = append(addrs, st.Addr())
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		hint := "lockstep explain " + pl.Filename + " lists them"
		names := append([]string{}, addrs...)
		for _, st := range pl.Steps {
			names = append(names, st.Name)
		}
		if s := Suggest(name, names); s != "" {
			hint = fmt.Sprintf("did you mean %q?", s)
		}
		return nil, fmt.Errorf("%s has no step %q; %s", pl.Filename, name, hint)
	}
	var both []string
	for _, st := range byName {
		both = append(both, st.Addr())
	}
	return nil, fmt.Errorf("%q names %d steps of %s (%s): write KIND.NAME", name, len(byName), pl.Filename, strings.Join(both, ", "))
}

// PartOf is the part of the plan that --from from, or --only only,
// runs. From: the steps before it are re-confirmed, it and those after
// run. Only: the steps it names run, those they read (their outputs, or
// the launch a log probe names) are re-confirmed, and the rest are left.
// Neither: the whole plan.
func (pl *Plan) PartOf(from string, only []string) (Part, error) {
	part := Part{Modes: map[string]StepMode{}}
	if from != "" && len(only) > 0 {
		return part, fmt.Errorf("--from and --only cannot go together: --from runs every step from one on, --only the steps it names")
	}
	if from != "" {
		st, err := pl.StepNamed(from)
		if err != nil {
			return part, err
		}
		part.From = st.Addr()
		mode := Reconfirm
		for _, s := range pl.Steps {
			if s == st {
				mode = RunStep
			}
			part.Modes[s.Addr()] = mode
		}
		return part, nil
	}
	if len(only) == 0 {
		return part, nil
	}
	for _, name := range only {
		st, err := pl.StepNamed(name)
		if err != nil {
			return part, err
		}
		if !slices.Contains(part.Only, st.Addr()) {
			part.Only = append(part.Only, st.Addr())
		}
	}
	for _, s := range pl.Steps {
		part.Modes[s.Addr()] = Leave
	}
	for _, addr := range part.Only {
		part.Modes[addr] = RunStep
	}
	for _, s := range pl.Steps {
		if part.Modes[s.Addr()] != RunStep {
			continue
		}
		for _, read := range stepReads(s) {
			if part.Modes[read] == Leave {
				part.Modes[read] = Reconfirm
			}
		}
	}
	return part, nil
}

// stepReads are the steps a step needs: those whose outputs it reads and
// the launches its log probes read.
func stepReads(s *Step) []string {
	out := s.Reads.Steps()
	for _, pb := range s.Probes {
		for _, a := range []string{pb.Step, pb.Since} {
			if a != "" && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// Explain says, in e, what a run of this part does with each step: a
// fact first in each step's, and a line for the whole (e.Part).
func (p Part) Explain(pl *Plan, e *Explanation) {
	if p.Whole() {
		return
	}
	var again, runs, left []string
	for i, st := range pl.Steps {
		if i >= len(e.Steps) {
			break
		}
		var what string
		switch p.Mode(st.Addr()) {
		case Reconfirm:
			again = append(again, st.Addr())
			switch st.Kind {
			case "launch":
				what = "re-confirmed, not started: adopts the process an earlier attempt of this plan launched and left running (found by the record that kept it, its pidfile, or the listener of a port the plan names), if it is still that process (pid and start time) running the same command, and judges the postconditions on its log from its start; with none to adopt the step fails: it never launches"
			case "run", "benchmark":
				what = "re-confirmed, not run: its conditions are judged on what the newest attempt that confirmed it recorded (with the same attributes), and its probes now"
			default:
				what = "re-confirmed: it has no action; its probes and conditions are evaluated on what is there now"
			}
		case Leave:
			left = append(left, st.Addr())
			what = "left out: --only does not name it, and no step it names reads it"
		default:
			runs = append(runs, st.Addr())
			what = "runs"
		}
		e.Steps[i].Facts = append([]Fact{{Label: "In this run", Value: what}}, e.Steps[i].Facts...)
	}
	flag := "--from " + p.From
	if p.From == "" {
		flag = "--only " + strings.Join(p.Only, ",")
	}
	line := "with " + flag + ": "
	if len(again) > 0 {
		line += "re-confirms " + strings.Join(again, ", ") + " (no action, on what is there now); "
	}
	line += "runs " + strings.Join(runs, ", ")
	if len(left) > 0 {
		line += "; leaves out " + strings.Join(left, ", ")
	}
	e.Part = line
}
