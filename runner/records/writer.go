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

// Steps' ends are synced to the disk at most this often: the steps that
// end meanwhile share the sync after the wait (a plan of 1,000 run steps
// of true otherwise made 1,000 fsyncs, a tenth of a millisecond of CPU
// each). Every event is written as it happens all the same, so a killed
// lockstep loses none of them; the wait bounds what a crash of the
// machine itself can take.
const syncEvery = 50 * time.Millisecond

// Observed values longer than this are cut in the record: a log probe's
// text can be megabytes, and the step's evidence keeps what decided it.
const maxValueBytes = 4096

// maxAllocTries bounds the search for a free attempt number, so a records
// directory that cannot be written fails instead of looping.
const maxAllocTries = 1000

// Writer appends one attempt's events to its record. It is an
// events.Observer. Writes go straight to the file (so a killed process
// loses nothing it emitted: what is written is the kernel's to keep); the
// file is synced to the disk at the start and at the end of the attempt,
// and after the end of every step by a goroutine of its own (syncer), so
// that no step waits for the disk: an fsync takes milliseconds, as long as
// a step of `true`, and steps that end while one runs share the next.
// A write error does not stop the run: the first one is kept, what could
// not be written is counted, and Close returns an *IncompleteError that
// says what the record lost.
type Writer struct {
	plan string
	n    int
	dir  string

	mu       sync.Mutex
	f        *os.File
	err      error
	onError  func(error)
	notify   bool // the first error is yet to be told to onError
	lost     lostEvents
	gap      int       // events lost since the last one written
	gapFrom  time.Time // when the first of them happened
	broken   bool      // the last write failed: start the next line afresh
	last     map[string]observed
	progress map[string]time.Time        // when each step's progress was last written
	pending  map[pendingKey]events.Event // held back, not yet written
	closed   bool
	gone     bool // at Close, the record's path no longer named the file written

	// syncs asks the syncer for a sync (a full buffer of one: a request
	// made while one waits is the same sync); synced is closed when the
	// syncer has ended, after Close closed syncs.
	syncs  chan struct{}
	synced chan struct{}
	// closing is closed by Close, ending a wait of the syncer's.
	closing chan struct{}
}

// lostEvents is what a record could not keep.
type lostEvents struct {
	events int      // events not written
	steps  []string // steps whose outcome is among them
	end    bool     // the attempt's verdict is among them
	plan   bool     // the copy of the plan was not saved
}

// IncompleteError says that an attempt's record is not whole, and what it
// lost: a run whose record could not be written in full has no verdict
// to keep.
type IncompleteError struct {
	Attempt int
	Path    string // the record's events file
	Err     error  // the first failure
	Lost    int    // events not written
	Steps   []string
	End     bool // the attempt's verdict was not written
	Plan    bool // the copy of the plan was not saved
	Gone    bool // the record's file was removed or replaced while the run wrote it
}

func (e *IncompleteError) Error() string {
	var lost []string
	if e.Gone {
		lost = append(lost, "the whole record: its file was removed or replaced during the run")
	}
	if e.Lost > 0 {
		l := fmt.Sprintf("%d event%s", e.Lost, map[bool]string{true: "s"}[e.Lost != 1])
		var among []string
		if len(e.Steps) > 0 {
			among = append(among, "the outcome of "+strings.Join(e.Steps, ", "))
		}
		if e.End {
			among = append(among, "the attempt's verdict")
		}
		if len(among) > 0 {
			l += " (" + strings.Join(among, "; ") + ")"
		}
		lost = append(lost, l)
	}
	if e.Plan {
		lost = append(lost, "the copy of the plan")
	}
	msg := fmt.Sprintf("the record of attempt %d is incomplete", e.Attempt)
	if len(lost) > 0 {
		msg += "; lost: " + strings.Join(lost, "; ")
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *IncompleteError) Unwrap() error { return e.Err }

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
	w := &Writer{
		plan:     plan,
		n:        n,
		dir:      dir,
		f:        f,
		last:     map[string]observed{},
		progress: map[string]time.Time{},
		pending:  map[pendingKey]events.Event{},
		syncs:    make(chan struct{}, 1),
		synced:   make(chan struct{}),
		closing:  make(chan struct{}),
	}
	go w.syncer(w.syncs)
	return w, nil
}

// syncer syncs the record whenever asked, but not within syncEvery of
// its last sync, until Close closes syncs (Close syncs itself, so the
// wait ends there). The file is not closed before it has ended.
func (w *Writer) syncer(syncs <-chan struct{}) {
	defer close(w.synced)
	var last time.Time
	for range syncs {
		if wait := syncEvery - time.Since(last); wait > 0 {
			// Requests made meanwhile wait in syncs, unread: no wake-up
			// for each step's end.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.closing:
				t.Stop()
				return
			}
		}
		last = time.Now()
		w.mu.Lock()
		f := w.f
		w.mu.Unlock()
		if err := f.Sync(); err != nil {
			w.mu.Lock()
			w.keep(fmt.Errorf("sync record of attempt %d: %w", w.n, err))
			w.unlock()
		}
	}
}

// Number is the attempt's number, 1 for a plan's first.
func (w *Writer) Number() int { return w.n }

// Dir is the attempt's directory.
func (w *Writer) Dir() string { return w.dir }

// OnError sets fn to be called, once, with the first error the record
// meets, as it happens (the run goes on; Close reports the loss).
func (w *Writer) OnError(fn func(error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onError = fn
}

// SavePlan keeps a copy of the plan file's text as it was run. A failure
// is also kept: Close reports the copy as lost.
func (w *Writer) SavePlan(src []byte) error {
	err := savePlan(filepath.Join(w.dir, PlanFile), src)
	if err != nil {
		err = fmt.Errorf("save plan copy of attempt %d: %w", w.n, err)
		w.mu.Lock()
		w.lost.plan = true
		w.keep(err)
		w.unlock()
	}
	return err
}

func savePlan(path string, src []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, werr := f.Write(src)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// Emit appends e to the record. It fills in the plan and attempt number
// when the runner left them empty.
func (w *Writer) Emit(e events.Event) {
	w.mu.Lock()
	defer w.unlock()
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
	case events.AttemptStarted, events.AttemptFinished:
		w.sync()
	case events.StepFinished:
		select {
		case w.syncs <- struct{}{}:
		default: // one is asked for already, and will see this step's end
		}
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
		w.lose(e)
		return
	}
	w.broken = false
	if w.gap > 0 {
		// Writing works again (space was freed): the record itself says
		// what it lost, so a reader does not take it for whole.
		n, from := w.gap, w.gapFrom
		w.gap = 0
		w.write(events.Event{Type: events.Warning, Time: time.Now(), Plan: w.plan, Attempt: w.n,
			Message: fmt.Sprintf("the record lost %d event%s from %s on: %v", n, map[bool]string{true: "s"}[n != 1], from.Format("15:04:05.000"), w.err)})
	}
}

// lose counts e as not written.
func (w *Writer) lose(e events.Event) {
	if w.gap == 0 {
		w.gapFrom = e.Time
	}
	w.gap++
	w.lost.events++
	switch {
	case e.Type == events.StepFinished && e.Step != nil:
		w.lost.steps = append(w.lost.steps, e.Step.Addr)
	case e.Type == events.AttemptFinished:
		w.lost.end = true
	}
}

func (w *Writer) sync() {
	if err := w.f.Sync(); err != nil {
		w.keep(fmt.Errorf("sync record of attempt %d: %w", w.n, err))
	}
}

func (w *Writer) keep(err error) {
	if w.err == nil {
		w.err = err
		w.notify = w.onError != nil
	}
}

// unlock releases the writer's lock, then tells OnError's function of a
// first error: outside the lock, so that it may write (to a stderr that
// fails in turn and reports that to the record).
func (w *Writer) unlock() {
	fn, err := w.onError, w.err
	notify := w.notify
	w.notify = false
	w.mu.Unlock()
	if notify {
		fn(err)
	}
}

// Close writes what is held back, syncs and closes the record. When the
// record is not whole (a write or sync failed, the plan copy was not
// saved, the file was removed or replaced under the run) it returns an
// *IncompleteError saying what was lost.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		// The syncer may need the lock to report a failure: it ends
		// first, outside it.
		if w.syncs != nil {
			close(w.closing)
			close(w.syncs)
			w.syncs = nil
			w.mu.Unlock()
			<-w.synced
			w.mu.Lock()
		}
	}
	defer w.unlock()
	if w.closed {
		return w.incomplete()
	}
	w.flushAll()
	w.sync()
	w.gone = !w.stillThere()
	if err := w.f.Close(); err != nil {
		w.keep(fmt.Errorf("close record of attempt %d: %w", w.n, err))
	}
	w.closed = true
	return w.incomplete()
}

// stillThere reports whether the record's path still names the file being
// written: writes to a file removed (rm -rf .lockstep) or replaced under
// the run succeed, and reach no one.
func (w *Writer) stillThere() bool {
	open, err := w.f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(filepath.Join(w.dir, EventsFile))
	return err == nil && os.SameFile(open, named)
}

func (w *Writer) incomplete() error {
	if w.err == nil && !w.gone {
		return nil
	}
	return &IncompleteError{
		Attempt: w.n, Path: filepath.Join(w.dir, EventsFile), Err: w.err,
		Lost: w.lost.events, Steps: w.lost.steps, End: w.lost.end, Plan: w.lost.plan, Gone: w.gone,
	}
}

// redactStart returns s with every trace of a sensitive variable's value
// redacted: the runner redacts its value, and this makes sure its default
// and a -var NAME=VALUE on the command line cannot reach the record either.
// The runner's Start is left untouched.
func redactStart(s *events.Start) *events.Start {
	sensitive := map[string]bool{}
	for name, v := range s.Vars {
		if v == Redacted {
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
			v = Redacted
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
			arg = prefix + name + "=" + Redacted
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
