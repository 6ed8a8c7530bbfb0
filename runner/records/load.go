package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"lockstep/runner/events"
)

// Attempt is one attempt read back from its record.
type Attempt struct {
	Plan    string `json:"plan"`
	Number  int    `json:"attempt"`
	Dir     string `json:"dir"`
	Version int    `json:"version"`

	Start    events.Start   `json:"start"`
	Started  time.Time      `json:"started,omitzero"`
	Finished time.Time      `json:"finished,omitzero"`
	Outcome  events.Outcome `json:"outcome"`

	// Incomplete: the record has no attempt_finished. Either the run is
	// still going (Running) or it was killed, and then Outcome says
	// interrupted, in the step InStep.
	Incomplete bool   `json:"incomplete,omitempty"`
	Running    bool   `json:"running,omitempty"`
	InStep     string `json:"in_step,omitempty"`

	Steps    []*Step   `json:"steps"`
	Warnings []Warning `json:"warnings,omitempty"`
	// Targets says where each remote target resolved to, and how.
	Targets []string `json:"targets,omitempty"`

	// PlanSource is the copy of the plan the attempt ran, if it was kept.
	PlanSource []byte `json:"-"`

	// Unreadable counts lines of the record that did not parse; Torn says
	// the last one was cut short (the writer died mid-line).
	Unreadable int  `json:"unreadable_lines,omitempty"`
	Torn       bool `json:"torn,omitempty"`
}

// Step is one step of an attempt and all the record says about it.
type Step struct {
	events.Step
	Status       events.Status    `json:"status"` // how it ended; see State for steps that did not end
	Started      time.Time        `json:"started,omitzero"`
	Finished     time.Time        `json:"finished,omitzero"`
	Actions      []events.Action  `json:"actions,omitempty"`
	Observations []Observation    `json:"observations,omitempty"`
	Progress     *events.Progress `json:"progress,omitempty"` // the last one
	Outcome      *events.Outcome  `json:"outcome,omitempty"`
	Cleanups     []events.Cleanup `json:"cleanups,omitempty"`
}

// Observation is one recorded turn of a step's confirm loop.
type Observation struct {
	Time time.Time `json:"time"`
	events.Observation
}

// Warning is a warning the runner gave during the attempt.
type Warning struct {
	Time    time.Time `json:"time"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message"`
}

// State says how a step stands in the record: its status when it ended,
// else "running", "interrupted" (the run was killed in it) or "not run".
func (s *Step) State(a *Attempt) string {
	switch {
	case s.Outcome != nil:
		return string(s.Status)
	case s.Started.IsZero():
		return "not run"
	case a.Running:
		return "running"
	case a.Incomplete:
		return string(events.Interrupted)
	}
	return "unfinished"
}

// Duration is how long the attempt took; for a killed one, up to its last
// recorded event.
func (a *Attempt) Duration() time.Duration {
	if a.Outcome.Duration > 0 {
		return a.Outcome.Duration
	}
	if !a.Finished.IsZero() && !a.Started.IsZero() {
		return a.Finished.Sub(a.Started)
	}
	return 0
}

// Load reads the attempt recorded in dir. A last line cut short is
// ignored; a record without attempt_finished reads as interrupted, unless
// its writer is still at work.
func Load(dir string) (*Attempt, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read attempt: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("read attempt: %s is not a directory", dir)
	}
	a := &Attempt{Dir: dir}
	if n, ok := attemptNumber(filepath.Base(dir)); ok {
		a.Number = n
		a.Plan = filepath.Base(filepath.Dir(dir))
	}
	path := filepath.Join(dir, EventsFile)
	// The lock before the data: a writer gone by now has written all it
	// will; one that finishes in between leaves attempt_finished in what
	// is read, and then the attempt is not running.
	a.Running = beingWritten(path)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read attempt %d: %w", a.Number, err)
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e events.Event
		if err := json.Unmarshal(line, &e); err != nil {
			if i == len(lines)-1 {
				a.Torn = true // no newline after it: the writer died mid-line
			} else {
				a.Unreadable++
			}
			continue
		}
		a.apply(e)
	}
	if src, err := os.ReadFile(filepath.Join(dir, PlanFile)); err == nil {
		a.PlanSource = src
	}
	a.finish(len(data) == 0)
	return a, nil
}

func (a *Attempt) apply(e events.Event) {
	// The directory names the attempt; the events only when it cannot.
	if a.Plan == "" {
		a.Plan = e.Plan
	}
	if a.Number == 0 {
		a.Number = e.Attempt
	}
	var s *Step
	if e.Step != nil {
		s = a.step(*e.Step)
	}
	switch e.Type {
	case events.AttemptStarted:
		a.Version = e.Version
		a.Started = e.Time
		if e.Start != nil {
			a.Start = *e.Start
			for _, st := range e.Start.Steps {
				a.step(st)
			}
		}
	case events.StepStarted:
		if s != nil {
			s.Started = e.Time
		}
	case events.StepAction:
		if s != nil && e.Action != nil {
			s.Actions = append(s.Actions, *e.Action)
		}
	case events.Observed:
		if s != nil && e.Observation != nil {
			s.Observations = append(s.Observations, Observation{Time: e.Time, Observation: *e.Observation})
		}
	case events.Progressed:
		if s != nil && e.Progress != nil {
			p := *e.Progress
			s.Progress = &p
		}
	case events.StepFinished:
		if s != nil && e.Outcome != nil {
			o := *e.Outcome
			s.Outcome = &o
			s.Status = o.Status
			s.Finished = e.Time
			if s.Started.IsZero() && o.Status != events.Skipped {
				s.Started = e.Time.Add(-o.Duration)
			}
		}
	case events.ProcessStopped:
		if s != nil && e.Cleanup != nil {
			s.Cleanups = append(s.Cleanups, *e.Cleanup)
		}
	case events.Warning:
		w := Warning{Time: e.Time, Message: e.Message}
		if s != nil {
			w.Step = s.Addr
		}
		a.Warnings = append(a.Warnings, w)
	case events.TargetOpened:
		a.Targets = append(a.Targets, e.Message)
	case events.AttemptFinished:
		a.Finished = e.Time
		if e.Outcome != nil {
			a.Outcome = *e.Outcome
		}
	}
}

// step returns the attempt's step at st.Addr, adding it if the record has
// not named it before.
func (a *Attempt) step(st events.Step) *Step {
	for _, s := range a.Steps {
		if s.Addr == st.Addr {
			return s
		}
	}
	s := &Step{Step: st}
	a.Steps = append(a.Steps, s)
	return s
}

// finish settles an attempt whose record has no attempt_finished.
func (a *Attempt) finish(empty bool) {
	if !a.Finished.IsZero() {
		a.Running = false
		return
	}
	a.Incomplete = true
	for _, s := range a.Steps {
		if !s.Started.IsZero() && s.Outcome == nil {
			a.InStep = s.Addr
		}
	}
	if a.Running {
		return
	}
	a.Outcome.Status = events.Interrupted
	switch {
	case empty:
		a.Outcome.Reason = "the run was killed before it recorded anything"
	case a.InStep != "":
		a.Outcome.Reason = "the run was killed in step " + a.InStep + "; its record has no attempt_finished"
		a.Outcome.Failed = a.InStep
	default:
		a.Outcome.Reason = "the run was killed between steps; its record has no attempt_finished"
	}
	if last := a.lastTime(); !last.IsZero() && !a.Started.IsZero() {
		a.Outcome.Duration = last.Sub(a.Started)
	}
}

// lastTime is the time of the last thing the record saw.
func (a *Attempt) lastTime() time.Time {
	last := a.Started
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	for _, s := range a.Steps {
		later(s.Started)
		later(s.Finished)
		if n := len(s.Observations); n > 0 {
			later(s.Observations[n-1].Time)
		}
	}
	for _, w := range a.Warnings {
		later(w.Time)
	}
	return last
}

// Plans lists the plans that have attempts under root, sorted by name.
func Plans(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "attempts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list plans with attempts: %w", err)
	}
	var plans []string
	for _, e := range entries {
		if e.IsDir() {
			plans = append(plans, e.Name())
		}
	}
	sort.Strings(plans)
	return plans, nil
}

// List reads every attempt of plan under root, oldest first; with plan
// empty, every plan's, by plan name then number.
func List(root, plan string) ([]*Attempt, error) {
	plans := []string{plan}
	if plan == "" {
		var err error
		if plans, err = Plans(root); err != nil {
			return nil, err
		}
	} else if err := checkPlanName(plan); err != nil {
		return nil, err
	}
	var atts []*Attempt
	for _, p := range plans {
		nums, err := Numbers(root, p)
		if err != nil {
			return nil, err
		}
		for _, n := range nums {
			a, err := Load(AttemptDir(root, p, n))
			if err != nil {
				return nil, err
			}
			atts = append(atts, a)
		}
	}
	return atts, nil
}

// Numbers lists the attempt numbers of plan under root, in order.
func Numbers(root, plan string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join(root, "attempts", plan))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list attempts of plan %s: %w", plan, err)
	}
	var nums []int
	for _, e := range entries {
		if n, ok := attemptNumber(e.Name()); ok && e.IsDir() {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	return nums, nil
}

// AttemptDir is where attempt n of plan is recorded under root.
func AttemptDir(root, plan string, n int) string {
	return filepath.Join(root, "attempts", plan, strconv.Itoa(n))
}

// EnvRoot names the environment variable that overrides where records are
// kept.
const EnvRoot = "LOCKSTEP_RECORDS"

// Root is the records root: override (the --records flag) if set, else
// $LOCKSTEP_RECORDS, else .lockstep beside the plan file (planFile empty:
// in the current directory).
func Root(override, planFile string) string {
	if override != "" {
		return override
	}
	if env := os.Getenv(EnvRoot); env != "" {
		return env
	}
	return filepath.Join(filepath.Dir(planFile), ".lockstep")
}

// Where Find looks: records are kept beside their plans, so a user in a
// project's top folder has them a few folders down. The walk is bounded so
// that `lockstep attempts` in a home directory stays quick.
const (
	findDepth = 4
	findDirs  = 5000
)

// Find lists the records roots (.lockstep folders holding attempts) in dir
// and the folders below it, down to a few levels, skipping hidden folders;
// nearest first, then by name.
func Find(dir string) []string {
	var found []string
	level := []string{dir}
	visited := 0
	for depth := 0; depth <= findDepth && len(level) > 0 && visited < findDirs; depth++ {
		var next []string
		for _, d := range level {
			visited++
			if visited > findDirs {
				break
			}
			root := filepath.Join(d, ".lockstep")
			if info, err := os.Stat(filepath.Join(root, "attempts")); err == nil && info.IsDir() {
				found = append(found, root)
			}
			entries, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if e.IsDir() && e.Name()[0] != '.' {
					next = append(next, filepath.Join(d, e.Name()))
				}
			}
		}
		level = next
	}
	return found
}
