package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"lockstep/runner/events"
)

// File names inside an attempt's directory.
const (
	EventsFile = "events.jsonl"
	PlanFile   = "plan.hcl"
)

// Owner-only: records hold commands, hosts and log lines.
const (
	dirPerm  fs.FileMode = 0o700
	filePerm fs.FileMode = 0o600
)

// Observations that repeat the previous one's summary are written at most
// this often: a 30-minute wait polled every 100 ms would otherwise fill the
// record with 18,000 copies of "probe.health.status = 503". The last one
// before the step ends is always written.
const observeEvery = 10 * time.Second

// Progress (a load's counters, a fraction) is written at most this often
// per step; a record reader wants the last one, and a 10-minute benchmark
// reporting every 100 ms would otherwise write 6,000.
const progressEvery = 5 * time.Second

// Observed values longer than this are cut in the record: a log probe's
// text can be megabytes, and the step's evidence keeps what decided it.
const maxValueBytes = 4096

// maxAllocTries bounds the search for a free attempt number, so a records
// directory that cannot be written fails instead of looping.
const maxAllocTries = 1000

// Writer appends one attempt's events to its record. It is an
// events.Observer. Writes go straight to the file (so a killed process
// loses nothing it emitted); the file is synced at the start, at the end of
// every step and at the end of the attempt, never inside a confirm loop.
// A write error does not stop the run: the first one is kept and returned
// by Close.
type Writer struct {
	plan string
	n    int
	dir  string

	mu       sync.Mutex
	f        *os.File
	err      error
	broken   bool // the last write failed: start the next line afresh
	last     map[string]observed
	progress map[string]time.Time        // when each step's progress was last written
	pending  map[pendingKey]events.Event // held back, not yet written
	closed   bool
}

type pendingKey struct {
	typ  events.Type
	step string
}

type observed struct {
	summary string
	time    time.Time
}

var _ events.Observer = (*Writer)(nil)

// Open allocates the next attempt number of plan under root (the .lockstep
// directory) and creates its record. Two processes opening at once get
// distinct numbers: a number is taken by creating its directory, which
// only one can do.
func Open(root, plan string) (*Writer, error) {
	if err := checkPlanName(plan); err != nil {
		return nil, err
	}
	planDir := filepath.Join(root, "attempts", plan)
	if err := os.MkdirAll(planDir, dirPerm); err != nil {
		return nil, fmt.Errorf("create records directory: %w", err)
	}
	n, err := highest(planDir)
	if err != nil {
		return nil, err
	}
	var dir string
	for tries := 0; ; tries++ {
		n++
		dir = filepath.Join(planDir, strconv.Itoa(n))
		err := os.Mkdir(dir, dirPerm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || tries >= maxAllocTries {
			return nil, fmt.Errorf("allocate attempt %d of plan %s: %w", n, plan, err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, filePerm)
	if err != nil {
		return nil, fmt.Errorf("create record of attempt %d: %w", n, err)
	}
	// Held until Close (or until the process dies): readers tell a running
	// attempt from a killed one by it.
	if err := lockExclusive(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock record of attempt %d: %w", n, err)
	}
	syncDir(dir)
	return &Writer{
		plan:     plan,
		n:        n,
		dir:      dir,
		f:        f,
		last:     map[string]observed{},
		progress: map[string]time.Time{},
		pending:  map[pendingKey]events.Event{},
	}, nil
}

// Number is the attempt's number, 1 for a plan's first.
func (w *Writer) Number() int { return w.n }

// Dir is the attempt's directory.
func (w *Writer) Dir() string { return w.dir }

// SavePlan keeps a copy of the plan file's text as it was run.
func (w *Writer) SavePlan(src []byte) error {
	f, err := os.OpenFile(filepath.Join(w.dir, PlanFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return fmt.Errorf("save plan copy of attempt %d: %w", w.n, err)
	}
	_, werr := f.Write(src)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("save plan copy of attempt %d: %w", w.n, err)
	}
	return nil
}

// Emit appends e to the record. It fills in the plan and attempt number
// when the runner left them empty.
func (w *Writer) Emit(e events.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.keep(fmt.Errorf("event %s after the record of attempt %d was closed", e.Type, w.n))
		return
	}
	if e.Plan == "" {
		e.Plan = w.plan
	}
	if e.Attempt == 0 {
		e.Attempt = w.n
	}
	if e.Type == events.AttemptStarted {
		if e.Version == 0 {
			e.Version = events.Version
		}
		if e.Start != nil {
			e.Start = redactStart(e.Start)
		}
	}
	if e.Type == events.Observed && e.Step != nil && e.Observation != nil {
		w.observe(e)
		return
	}
	if e.Type == events.Progressed && e.Step != nil {
		w.progressed(e)
		return
	}
	if e.Step != nil && e.Type == events.StepFinished {
		w.flushPending(e.Step.Addr)
	}
	if e.Type == events.AttemptFinished {
		w.flushAll()
	}
	w.write(e)
	switch e.Type {
	case events.AttemptStarted, events.StepFinished, events.AttemptFinished:
		w.sync()
	}
}

// observe writes an observation unless it repeats the last one written for
// its step within observeEvery; a repeat is held back until the next
// different one, or the end of the step.
func (w *Writer) observe(e events.Event) {
	addr := e.Step.Addr
	e.Observation = cutValues(e.Observation)
	last, seen := w.last[addr]
	key := pendingKey{events.Observed, addr}
	if seen && last.summary == e.Observation.Summary && e.Time.Sub(last.time) < observeEvery {
		w.pending[key] = e
		return
	}
	delete(w.pending, key)
	w.write(e)
	w.last[addr] = observed{summary: e.Observation.Summary, time: e.Time}
}

// progressed writes a step's progress at most every progressEvery, holding
// the latest back until then or the end of the step.
func (w *Writer) progressed(e events.Event) {
	addr := e.Step.Addr
	key := pendingKey{events.Progressed, addr}
	if last, ok := w.progress[addr]; ok && e.Time.Sub(last) < progressEvery {
		w.pending[key] = e
		return
	}
	delete(w.pending, key)
	w.write(e)
	w.progress[addr] = e.Time
}

// flushPending writes what is held back for a step, observation first.
func (w *Writer) flushPending(addr string) {
	for _, typ := range []events.Type{events.Observed, events.Progressed} {
		key := pendingKey{typ, addr}
		if e, ok := w.pending[key]; ok {
			delete(w.pending, key)
			w.write(e)
		}
	}
}

func (w *Writer) flushAll() {
	for key := range w.pending {
		w.flushPending(key.step)
	}
}

func (w *Writer) write(e events.Event) {
	line, err := json.Marshal(e)
	if err != nil {
		w.keep(fmt.Errorf("encode %s event: %w", e.Type, err))
		return
	}
	line = append(line, '\n')
	if w.broken {
		// A failed write may have left half a line: end it, so this
		// event reads as a line of its own.
		line = append([]byte{'\n'}, line...)
	}
	if _, err := w.f.Write(line); err != nil {
		w.broken = true
		w.keep(fmt.Errorf("write record of attempt %d: %w", w.n, err))
		return
	}
	w.broken = false
}

func (w *Writer) sync() {
	if err := w.f.Sync(); err != nil {
		w.keep(fmt.Errorf("sync record of attempt %d: %w", w.n, err))
	}
}

func (w *Writer) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Close writes what is held back, syncs and closes the record, and returns
// the first error met since Open.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.flushAll()
	w.sync()
	if err := w.f.Close(); err != nil {
		w.keep(fmt.Errorf("close record of attempt %d: %w", w.n, err))
	}
	w.closed = true
	return w.err
}

// redactStart returns s with every trace of a sensitive variable's value
// redacted: the runner redacts its value, and this makes sure its default
// and a -var NAME=VALUE on the command line cannot reach the record either.
// The runner's Start is left untouched.
func redactStart(s *events.Start) *events.Start {
	sensitive := map[string]bool{}
	for name, v := range s.Vars {
		if v == redacted {
			sensitive[name] = true
		}
	}
	if len(sensitive) == 0 {
		return s
	}
	c := *s
	c.Defaults = make(map[string]string, len(s.Defaults))
	for name, v := range s.Defaults {
		if sensitive[name] {
			v = redacted
		}
		c.Defaults[name] = v
	}
	c.Args = make([]string, len(s.Args))
	for i, arg := range s.Args {
		// -var NAME=VALUE, -var=NAME=VALUE, --var ...
		prefix, assignment := "", arg
		if flag, rest, ok := strings.Cut(arg, "="); ok && strings.TrimLeft(flag, "-") == "var" {
			prefix, assignment = flag+"=", rest
		}
		if name, _, ok := strings.Cut(assignment, "="); ok && sensitive[name] {
			arg = prefix + name + "=" + redacted
		}
		c.Args[i] = arg
	}
	return &c
}

// cutValues returns o with its long values cut, leaving the runner's
// observation untouched.
func cutValues(o *events.Observation) *events.Observation {
	long := false
	for _, v := range o.Values {
		if len(v) > maxValueBytes {
			long = true
			break
		}
	}
	if !long {
		return o
	}
	c := *o
	c.Values = make(map[string]string, len(o.Values))
	for k, v := range o.Values {
		if len(v) > maxValueBytes {
			v = fmt.Sprintf("%s… (%d bytes in all)", cutUTF8(v, maxValueBytes), len(v))
		}
		c.Values[k] = v
	}
	return &c
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// highest returns the largest attempt number in dir, 0 if none.
func highest(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read records directory: %w", err)
	}
	max := 0
	for _, e := range entries {
		if n, ok := attemptNumber(e.Name()); ok && e.IsDir() && n > max {
			max = n
		}
	}
	return max, nil
}

// attemptNumber parses a directory name that is an attempt number.
func attemptNumber(name string) (int, bool) {
	n, err := strconv.Atoi(name)
	if err != nil || n < 1 || strconv.Itoa(n) != name {
		return 0, false
	}
	return n, true
}

// checkPlanName refuses a plan name that would not stay one directory
// under attempts/.
func checkPlanName(plan string) error {
	switch {
	case plan == "":
		return errors.New("a record needs the plan's name")
	case plan == "." || plan == "..", strings.ContainsAny(plan, `/\`+"\x00"):
		return fmt.Errorf("plan name %q cannot name a records directory", plan)
	}
	return nil
}

// syncDir makes a new entry of dir durable; a failure only weakens
// durability against power loss, never the record itself.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
