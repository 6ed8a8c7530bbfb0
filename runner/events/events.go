package events

import "time"

// Version is the version of the event and record format; the first event of
// a JSON stream and of every record carries it.
const Version = 1

// Type names an event.
type Type string

const (
	AttemptStarted  Type = "attempt_started"  // Attempt
	StepStarted     Type = "step_started"     // Step
	StepAction      Type = "step_action"      // Step, Action
	Observed        Type = "observed"         // Step, Observation: one turn of a confirm loop
	Progressed      Type = "progress"         // Step, Progress
	StepFinished    Type = "step_finished"    // Step, Outcome
	ProcessStopped  Type = "process_stopped"  // Step (the launch), Cleanup
	Warning         Type = "warning"          // Message
	TargetOpened    Type = "target_opened"    // Message: where a target's steps run and how that was resolved
	AttemptFinished Type = "attempt_finished" // Outcome
)

// Status is how a step or an attempt ended. The zero value is unknown.
type Status string

const (
	Unknown     Status = ""
	Confirmed   Status = "confirmed"   // every postcondition held
	Failed      Status = "failed"      // a postcondition was false at the end, a launched process died, the action failed
	Aborted     Status = "aborted"     // an abort_if held
	TimedOut    Status = "timed_out"   // the timeout passed before every postcondition held
	Skipped     Status = "skipped"     // not run because an earlier step failed
	Interrupted Status = "interrupted" // Ctrl-C, SIGTERM, or (seen in a record) the run was killed
	Errored     Status = "errored"     // lockstep could not evaluate or act (a target unreachable, an expression error)
)

// OK reports whether s counts as success.
func (s Status) OK() bool { return s == Confirmed }

// Event is one thing that happened. Exactly the fields its Type names are
// set; the rest are zero and omitted in JSON.
type Event struct {
	Type    Type      `json:"type"`
	Version int       `json:"version,omitempty"` // on attempt_started
	Time    time.Time `json:"time"`
	Plan    string    `json:"plan,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Step    *Step     `json:"step,omitempty"`

	Start       *Start       `json:"start,omitempty"`
	Action      *Action      `json:"action,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Progress    *Progress    `json:"progress,omitempty"`
	Outcome     *Outcome     `json:"outcome,omitempty"`
	Cleanup     *Cleanup     `json:"cleanup,omitempty"`
	Message     string       `json:"message,omitempty"`
}

// Step names the step an event is about.
type Step struct {
	Addr        string        `json:"addr"` // "wait.ready"
	Kind        string        `json:"kind"`
	Name        string        `json:"name"`
	Index       int           `json:"index"` // 0-based position in the plan
	Count       int           `json:"count"` // steps in the plan
	Target      string        `json:"target"`
	Description string        `json:"description,omitempty"`
	Timeout     time.Duration `json:"timeout_ns,omitempty"`
	Always      bool          `json:"always,omitempty"`
}

// Start describes an attempt as it begins.
type Start struct {
	PlanFile   string            `json:"plan_file"`
	PlanSHA256 string            `json:"plan_sha256"`
	Vars       map[string]string `json:"vars"`     // resolved values rendered as HCL; sensitive ones "(sensitive)"
	Defaults   map[string]string `json:"defaults"` // the plan's defaults, same rendering, to tell what differs
	Host       string            `json:"host"`
	User       string            `json:"user"`
	Note       string            `json:"note,omitempty"`
	Args       []string          `json:"args,omitempty"` // the command line, sensitive -var values redacted
	Steps      []Step            `json:"steps"`
	Lockstep   string            `json:"lockstep_version,omitempty"`
	// From and Only say the attempt ran part of the plan (--from STEP,
	// --only STEP,...): the steps before re-confirmed, not acted.
	From string   `json:"from,omitempty"`
	Only []string `json:"only,omitempty"`
	// Reconfirm lists the steps re-confirmed instead of run.
	Reconfirm []string `json:"reconfirm,omitempty"`
}

// Action is what a step did before its confirm loop: the command run (as
// resolved, redacted), the process it launched.
type Action struct {
	Command  string `json:"command,omitempty"`
	PID      int    `json:"pid,omitempty"`
	PGID     int    `json:"pgid,omitempty"`
	Log      string `json:"log,omitempty"`
	MovedLog string `json:"moved_log,omitempty"` // where an old log was moved aside
	ExitCode *int   `json:"exit_code,omitempty"`
	// Daemonized is set when the launch's command exited 0 into a daemon:
	// PID, PGID and Command are then the daemon's, which the launch follows.
	Daemonized bool `json:"daemonized,omitempty"`
	// Process is who a launch started (or, daemonized, followed), whole:
	// what a later attempt needs to find it again and to be sure it is
	// the same process (pid and start time), its mark and its log.
	Process *Held `json:"process,omitempty"`
	// Adopted is set on a launch that started nothing: it adopted the
	// process an earlier attempt launched and left running.
	Adopted *Adoption `json:"adopted,omitempty"`
}

// Held is a launched process as a record keeps it for a later attempt
// to adopt: the pid and its start time name one process across pid
// reuse; the mark is inherited by all it starts.
type Held struct {
	Target string `json:"target"`
	HeldProcess
	// Launched is the process Start started, when the launch follows a
	// daemon (Daemon): the members and the log are found through it.
	Launched *HeldProcess `json:"launched,omitempty"`
}

// HeldProcess is one process of a Held launch.
type HeldProcess struct {
	PID       int    `json:"pid"`
	PGID      int    `json:"pgid"`
	Session   int    `json:"sid,omitempty"`
	StartTime uint64 `json:"start_time"`
	// Log is where the log was, as shown (a path with a sensitive part
	// shows as such: the log is found by its identity, LogID, among the
	// descriptors of the processes). There is no command line: /proc's
	// may hold a secret; the action's command is the one shown.
	Log    string `json:"log,omitempty"`
	LogID  string `json:"log_id,omitempty"`
	Mark   string `json:"mark,omitempty"`
	Daemon bool   `json:"daemon,omitempty"`
}

// First is the process the launch started: Launched when it follows a
// daemon, else the one held.
func (h Held) First() HeldProcess {
	if h.Launched != nil {
		return *h.Launched
	}
	return h.HeldProcess
}

// Adoption says where an adopted process came from: the attempt that
// launched it (or last adopted it) and how it was found.
type Adoption struct {
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
	Found   string `json:"found"` // "the record of attempt 3", "pidfile /run/x.pid", "the listener of 127.0.0.1:8080"
	// Since is when attempt Attempt launched it.
	Since time.Time `json:"since,omitzero"`
}

// Served is who answered an http probe or a load to a loopback address
// of its target: the process holding the listening socket.
type Served struct {
	Address string `json:"address"` // the socket that answered: "127.0.0.1:8080", "0.0.0.0:8080"
	PID     int    `json:"pid"`     // 0: a process this user cannot see
	PGID    int    `json:"pgid,omitempty"`
	Command string `json:"command,omitempty"`
	// Step is the step of this attempt the process belongs to (a launch,
	// adopted or not, or a run whose command left it running); "" when it
	// is not of this attempt.
	Step string `json:"step,omitempty"`
	// Foreign says the attempt launched or adopted a server while the
	// answer came from a process that is none of its own.
	Foreign bool `json:"foreign,omitempty"`
	// Error says why who answered could not be told.
	Error string `json:"error,omitempty"`
}

// Observation is one turn of a confirm loop: what the probes read and what
// each condition made of it.
type Observation struct {
	Values     map[string]string `json:"values,omitempty"` // "probe.health.status" -> "503"
	Conditions []Condition       `json:"conditions,omitempty"`
	Summary    string            `json:"summary"` // one line: "probe.health.status = 503; connection refused"
}

// CondState is what evaluating a condition gave. The zero value is unknown.
type CondState string

const (
	CondUnknown CondState = ""
	CondHeld    CondState = "held"
	CondFalse   CondState = "false"
	CondNotYet  CondState = "not_yet" // could not be evaluated yet: a null, a missing key, a refused connection
	// CondError is a condition that fails on known values (a type error,
	// a pattern that does not compile): waiting cannot change it, so the
	// step fails at once.
	CondError CondState = "error"
)

// Condition is one postcondition or abort_if and its latest result.
type Condition struct {
	Kind         string    `json:"kind"` // "postcondition", "abort_if", "default"
	Source       string    `json:"source"`
	Range        string    `json:"range,omitempty"` // "plan.hcl:12:5"
	State        CondState `json:"state"`
	Reason       string    `json:"reason,omitempty"` // why not yet, or the error with its file:line:col
	ErrorMessage string    `json:"error_message,omitempty"`
}

// Progress reports a long step moving: a fraction from the step's progress
// expression, the last log line, a load's counters.
type Progress struct {
	Elapsed  time.Duration `json:"elapsed_ns"`
	Fraction *float64      `json:"fraction,omitempty"`
	LastLine string        `json:"last_line,omitempty"`
	Done     int64         `json:"done,omitempty"`
	Errors   int64         `json:"errors,omitempty"`
	Rate     float64       `json:"rate,omitempty"`
}

// Outcome is how a step or the attempt ended and why.
type Outcome struct {
	Status       Status             `json:"status"`
	Reason       string             `json:"reason,omitempty"`        // one line: "timed out after 30s", "process 123 exited with status 1"
	ErrorMessage string             `json:"error_message,omitempty"` // the plan's error_message of the deciding condition
	Failed       string             `json:"failed_step,omitempty"`   // on attempt_finished: the step that failed
	Duration     time.Duration      `json:"duration_ns"`
	Evidence     *Evidence          `json:"evidence,omitempty"`
	Metrics      map[string]float64 `json:"metrics,omitempty"`
	// Partial: the step was cut short (interrupted, timed out, a watched
	// process died) while it measured; Metrics are what it measured until
	// then, never a result to judge by.
	Partial bool              `json:"partial,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"` // self outputs worth keeping, rendered (pid, exit_code...)
	// Config is the step's attributes as its kind decoded them and the
	// step ran with, defaults included, each shown as the docs and
	// explain show a value (timeout "10m", grace "2s"); a sensitive one
	// is "(sensitive)". Progress is the last value the step's progress
	// took.
	Config map[string]string `json:"config,omitempty"`
	// Probes is, for each probe of the step, the config it ran with: its
	// attributes decoded with their defaults, each as the docs show a
	// default (an attribute showing as "" left out), sensitive values
	// redacted. It is what explain said beside what ran.
	Probes map[string]map[string]string `json:"probes,omitempty"`
	Stats  map[string]MetricStats       `json:"metric_stats,omitempty"`
	// Requests are a load's per-request records, kept when the load asks
	// (keep_requests = true).
	Requests []Request         `json:"requests,omitempty"`
	Notes    map[string]string `json:"notes,omitempty"`
	// Levels are a sweep's levels (a load whose concurrency or rate is a
	// list) or a goodput search's probes, in the order they ran, each
	// with its metrics; Metrics are then the last level's (and the
	// search's max_goodput_rate). Best is the index of the best level:
	// the most of the load's throughput, or the highest rate a search
	// found good; absent when none is.
	Levels []Level `json:"levels,omitempty"`
	Best   *int    `json:"best_level,omitempty"`
	// Load is, for a benchmark's load, the config it ran with, as Probes
	// keeps a probe's (the defaults that depend on other attributes, a
	// method, a duration, filled in).
	Load map[string]string `json:"load,omitempty"`
	// Left, for a step whose command runs to completion (run, a command
	// benchmark): the processes the command left running when it exited
	// (a daemon, a job it put in the background), found by the mark they
	// inherited. They are the attempt's: stopped at the end of the run
	// unless kept (the cleanup event says which).
	Left []LeftProcess `json:"left,omitempty"`
	// ServedBy says, for each http probe ("probe.NAME") and load
	// ("load") of the step to a loopback address, who answered it last.
	ServedBy map[string]Served `json:"served_by,omitempty"`
	// NotKept, on attempt_finished as the views show it: the record could
	// not be written in full, so the verdict is not kept (the run exits 3
	// whatever Status says); it says what was lost.
	NotKept string `json:"not_kept,omitempty"`
}

// LeftProcess is a process a step's command left running.
type LeftProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command,omitempty"` // as /proc showed it, cut to a readable length
}

// Request is one request of a load, times in milliseconds from the start
// of the measured run.
type Request struct {
	// Level is, in a sweep or a search, the level's index in Levels
	// (StartMS is then from the start of that level's measured run).
	Level        int     `json:"level,omitempty"`
	StartMS      float64 `json:"start_ms"`
	Status       int     `json:"status"`
	Error        string  `json:"error,omitempty"`
	TTFTMS       float64 `json:"ttft_ms"`
	E2EMS        float64 `json:"e2e_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

// Level is one level of a sweep or a goodput search, and what it
// measured.
type Level struct {
	Concurrency int                `json:"concurrency"`
	Rate        float64            `json:"rate,omitempty"` // arrivals per second; 0: the closed model
	Metrics     map[string]float64 `json:"metrics"`
	// Good, in a goodput search: the level's share of good arrivals held
	// the target.
	Good *bool `json:"good,omitempty"`
	// Partial: the step was cut short while this level ran.
	Partial bool `json:"partial,omitempty"`
}

// MetricStats are a repeated metric's values.
type MetricStats struct {
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Stddev float64   `json:"stddev"`
}

// Evidence is what decided an outcome.
type Evidence struct {
	Conditions []Condition         `json:"conditions,omitempty"`
	Values     map[string]string   `json:"values,omitempty"`
	LogLines   []string            `json:"log_lines,omitempty"` // matching lines, or the last lines of the log
	LogTail    map[string][]string `json:"log_tail,omitempty"`  // launch addr -> last 40 lines, when a process died
	History    []Sample            `json:"history,omitempty"`   // the last few observations, oldest first
	// Output is the end of what a failed command wrote: "self.stdout",
	// "probe.check.stderr" -> its last lines (a run step, a command
	// benchmark, an exec probe that exited non-zero).
	Output map[string][]string `json:"output,omitempty"`
}

// Sample is one line of waiting history.
type Sample struct {
	Time    time.Time `json:"time"`
	Summary string    `json:"summary"`
}

// Cleanup reports a launched process stopped (or kept) at the end.
type Cleanup struct {
	PID     int      `json:"pid"`
	Kept    bool     `json:"kept,omitempty"`
	Result  string   `json:"result"` // "stopped", "already exited with status 1", "kept running"
	Log     string   `json:"log,omitempty"`
	LogTail []string `json:"log_tail,omitempty"` // the last 40 lines of its log
	// Process is the kept process whole, for a later attempt to adopt
	// (set when Kept).
	Process *Held `json:"process,omitempty"`
	// Adopted says the process was adopted by this attempt, not launched.
	Adopted bool `json:"adopted,omitempty"`
}

// Observer receives events in order. Emit must not block for long: the
// runner calls it from the confirm loop.
type Observer interface {
	Emit(Event)
}

// Observers fans an event out to several observers in order.
type Observers []Observer

func (os Observers) Emit(e Event) {
	for _, o := range os {
		o.Emit(e)
	}
}
