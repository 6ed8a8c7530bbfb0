package records

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lockstep/runner/events"
	"lockstep/runner/records/recordstest"
)

// The test binary doubles as a process that opens a record, for the tests
// that need a second process or one to kill.
func TestMain(m *testing.M) {
	switch os.Getenv("RECORDS_HELPER") {
	case "open":
		helperOpen()
	case "killed":
		helperKilled()
	}
	os.Exit(m.Run())
}

// helperOpen opens an attempt when its stdin closes (so that several
// processes start at once) and prints its number.
func helperOpen() {
	bufio.NewReader(os.Stdin).ReadString('\n')
	w, err := Open(os.Getenv("RECORDS_ROOT"), "race")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(w.Number())
	w.Close()
	os.Exit(0)
}

// helperKilled records a failing attempt up to the middle of wait.ready,
// says so, and waits to be killed.
func helperKilled() {
	w, err := Open(os.Getenv("RECORDS_ROOT"), "glm5")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, e := range recordstest.Events(recordstest.Run{Backend: "flashinfer_trtllm", Dies: true}) {
		if e.Type == events.StepFinished && e.Step.Addr == "wait.ready" {
			break
		}
		w.Emit(e)
	}
	fmt.Println("in wait.ready")
	time.Sleep(time.Minute)
	os.Exit(3)
}

func emitAll(t *testing.T, w *Writer, evs []events.Event) {
	t.Helper()
	for _, e := range evs {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestNumbersFollowOnAcrossOpens(t *testing.T) {
	root := t.TempDir()
	for want := 1; want <= 3; want++ {
		w, err := Open(root, "glm5")
		if err != nil {
			t.Fatal(err)
		}
		if w.Number() != want {
			t.Errorf("attempt %d got number %d", want, w.Number())
		}
		if got, wantDir := w.Dir(), filepath.Join(root, "attempts", "glm5", strconv.Itoa(want)); got != wantDir {
			t.Errorf("Dir() = %s, want %s", got, wantDir)
		}
		w.Close()
	}
	// Another plan starts at 1; a gap left by a deleted attempt is not reused.
	if err := os.RemoveAll(filepath.Join(root, "attempts", "glm5", "2")); err != nil {
		t.Fatal(err)
	}
	w, err := Open(root, "other")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if w.Number() != 1 {
		t.Errorf("first attempt of another plan got number %d", w.Number())
	}
	w, err = Open(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if w.Number() != 4 {
		t.Errorf("after attempts 1 and 3, got number %d, want 4", w.Number())
	}
}

func TestConcurrentOpensGetDistinctNumbers(t *testing.T) {
	root := t.TempDir()
	const n = 8
	nums := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			w, err := Open(root, "race")
			if err != nil {
				t.Error(err)
				return
			}
			nums[i] = w.Number()
			w.Close()
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(nums)
	for i, got := range nums {
		if got != i+1 {
			t.Fatalf("numbers %v, want 1..%d each once", nums, n)
		}
	}
}

func TestConcurrentProcessesGetDistinctNumbers(t *testing.T) {
	root := t.TempDir()
	const n = 4
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	var gates []interface{ Close() error }
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "RECORDS_HELPER=open", "RECORDS_ROOT="+root)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs, gates = append(cmds, cmd), append(outs, out), append(gates, gate)
	}
	for _, g := range gates {
		g.Close()
	}
	var nums []int
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v: %s", i, err, outs[i])
		}
		num, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Fatalf("helper %d printed %q", i, outs[i])
		}
		nums = append(nums, num)
	}
	slices.Sort(nums)
	if !slices.Equal(nums, []int{1, 2, 3, 4}) {
		t.Errorf("processes got numbers %v, want 1 2 3 4", nums)
	}
}

func TestRecordIsOwnerOnly(t *testing.T) {
	root := t.TempDir()
	w, err := Open(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SavePlan([]byte(recordstest.PlanV1)); err != nil {
		t.Fatal(err)
	}
	emitAll(t, w, recordstest.Events(recordstest.Run{Backend: "flashinfer_cutlass", Tokens: 4000, P99: 800}))
	for _, p := range []string{filepath.Join(root, "attempts"), filepath.Join(root, "attempts", "glm5"), w.Dir()} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, err %v; want 0700", p, fi.Mode().Perm(), err)
		}
	}
	for _, name := range []string{EventsFile, PlanFile} {
		p := filepath.Join(w.Dir(), name)
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, err %v; want 0600", p, fi.Mode().Perm(), err)
		}
	}
}

func TestOpenRefusesPlanNamesOutsideTheRoot(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", `a\b`} {
		if _, err := Open(t.TempDir(), name); err == nil {
			t.Errorf("Open(root, %q) succeeded", name)
		}
	}
}

func TestLoadReadsBackAFinishedAttempt(t *testing.T) {
	root := t.TempDir()
	w, err := Open(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SavePlan([]byte(recordstest.PlanV1)); err != nil {
		t.Fatal(err)
	}
	emitAll(t, w, recordstest.Events(recordstest.Run{Backend: "flashinfer_trtllm", Dies: true, Note: "try trtllm"}))
	a, err := Load(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Plan != "glm5" || a.Number != 1 || a.Version != events.Version {
		t.Errorf("plan %q number %d version %d", a.Plan, a.Number, a.Version)
	}
	if a.Incomplete || a.Running || a.Torn || a.Unreadable != 0 {
		t.Errorf("finished attempt reads incomplete=%v running=%v torn=%v unreadable=%d", a.Incomplete, a.Running, a.Torn, a.Unreadable)
	}
	if a.Outcome.Status != events.Failed || a.Outcome.Failed != "wait.ready" || a.Outcome.ErrorMessage != "the server reported an error while loading" {
		t.Errorf("outcome %+v", a.Outcome)
	}
	if a.Start.Note != "try trtllm" || a.Start.Host != "bench-1" || a.Start.User != "me" {
		t.Errorf("start %+v", a.Start)
	}
	if string(a.PlanSource) != recordstest.PlanV1 {
		t.Errorf("plan copy %q", a.PlanSource)
	}
	var states []string
	for _, s := range a.Steps {
		states = append(states, s.Addr+"="+s.State(a))
	}
	want := []string{"launch.server=confirmed", "wait.ready=failed", "assert.coherent=skipped", "benchmark.throughput=skipped"}
	if !slices.Equal(states, want) {
		t.Errorf("steps %v, want %v", states, want)
	}
	launch := a.Steps[0]
	if len(launch.Actions) != 1 || launch.Actions[0].PID != 4242 || len(launch.Cleanups) != 1 {
		t.Errorf("launch.server actions %+v cleanups %+v", launch.Actions, launch.Cleanups)
	}
	if got := a.Steps[1].Outcome.Evidence.LogTail["launch.server"]; len(got) != 3 {
		t.Errorf("log tail %q", got)
	}
	if a.Duration() != 25*time.Second {
		t.Errorf("duration %v", a.Duration())
	}
}

func TestRepeatedObservationsAreThinned(t *testing.T) {
	root := t.TempDir()
	w, err := Open(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	step := &recordstest.Steps[1]
	obs := func(d time.Duration, summary string) events.Event {
		return events.Event{Type: events.Observed, Time: recordstest.At(d), Step: step, Observation: &events.Observation{Summary: summary}}
	}
	w.Emit(events.Event{Type: events.StepStarted, Time: recordstest.At(0), Step: step})
	for i := range 100 { // every 100ms for 10s, then one second more
		w.Emit(obs(time.Duration(i)*100*time.Millisecond, "refused"))
	}
	w.Emit(obs(10500*time.Millisecond, "refused"))
	w.Emit(obs(10600*time.Millisecond, "503"))
	w.Emit(obs(10700*time.Millisecond, "503"))
	w.Emit(obs(10800*time.Millisecond, "200"))
	w.Emit(events.Event{Type: events.StepFinished, Time: recordstest.At(11 * time.Second), Step: step, Outcome: &events.Outcome{Status: events.Confirmed}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := Load(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range a.Steps[0].Observations {
		got = append(got, fmt.Sprintf("%s@%v", o.Summary, o.Time.Sub(recordstest.T0)))
	}
	// The first, one every 10s while it repeats, each change, the last.
	want := []string{"refused@0s", "refused@10.5s", "503@10.6s", "200@10.8s"}
	if !slices.Equal(got, want) {
		t.Errorf("observations kept %v, want %v", got, want)
	}

	// The last observation before the end is kept even when it repeats.
	w, _ = Open(root, "glm5")
	w.Emit(obs(0, "refused"))
	w.Emit(obs(time.Second, "refused"))
	w.Emit(events.Event{Type: events.StepFinished, Time: recordstest.At(2 * time.Second), Step: step, Outcome: &events.Outcome{Status: events.TimedOut}})
	w.Close()
	a, _ = Load(w.Dir())
	if n := len(a.Steps[0].Observations); n != 2 || !a.Steps[0].Observations[1].Time.Equal(recordstest.At(time.Second)) {
		t.Errorf("kept %d observations: %+v", n, a.Steps[0].Observations)
	}
}

func TestProgressIsThinnedToTheLatest(t *testing.T) {
	w, err := Open(t.TempDir(), "glm5")
	if err != nil {
		t.Fatal(err)
	}
	step := &recordstest.Steps[3]
	for i := range 100 { // every 100ms for 10s
		w.Emit(events.Event{Type: events.Progressed, Time: recordstest.At(time.Duration(i) * 100 * time.Millisecond), Step: step,
			Progress: &events.Progress{Elapsed: time.Duration(i) * 100 * time.Millisecond, Done: int64(i)}})
	}
	w.Emit(events.Event{Type: events.StepFinished, Time: recordstest.At(10 * time.Second), Step: step, Outcome: &events.Outcome{Status: events.Confirmed}})
	emitAll(t, w, nil)
	data, _ := os.ReadFile(filepath.Join(w.Dir(), EventsFile))
	if n := strings.Count(string(data), `"type":"progress"`); n != 3 { // at 0s, 5s, and the last
		t.Errorf("%d progress events written, want 3", n)
	}
	a, _ := Load(w.Dir())
	if p := a.Steps[0].Progress; p == nil || p.Done != 99 {
		t.Errorf("last progress %+v, want done 99", p)
	}
}

func TestLongObservedValuesAreCut(t *testing.T) {
	w, err := Open(t.TempDir(), "glm5")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", maxValueBytes) // 2 bytes each
	values := map[string]string{"probe.server.text": long, "probe.health.status": "200"}
	w.Emit(events.Event{Type: events.Observed, Time: recordstest.T0, Step: &recordstest.Steps[1], Observation: &events.Observation{Values: values, Summary: "s"}})
	emitAll(t, w, nil)
	if values["probe.server.text"] != long {
		t.Error("the runner's observation was changed")
	}
	a, _ := Load(w.Dir())
	got := a.Steps[0].Observations[0].Values
	if got["probe.health.status"] != "200" {
		t.Errorf("short value %q", got["probe.health.status"])
	}
	text := got["probe.server.text"]
	if len(text) > maxValueBytes+100 || !strings.HasSuffix(text, fmt.Sprintf("… (%d bytes in all)", len(long))) || !strings.HasPrefix(text, "éé") {
		t.Errorf("long value kept as %d bytes ending %q", len(text), text[len(text)-30:])
	}
}

// A run killed with SIGKILL in the middle of a step leaves a record that
// reads as interrupted in that step.
func TestKilledRunReadsAsInterrupted(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RECORDS_HELPER=killed", "RECORDS_ROOT="+root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "in wait.ready\n" {
		t.Fatalf("helper said %q", line)
	}
	dir := AttemptDir(root, "glm5", 1)

	// While its writer lives, the record reads as running.
	a, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Running || a.Outcome.Status != events.Unknown || a.InStep != "wait.ready" {
		t.Errorf("live record: running=%v status=%q in step %q", a.Running, a.Outcome.Status, a.InStep)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The writer died mid-line.
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"observed","time":"2026-11-29T22:10:3`)
	f.Close()

	a, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Running || !a.Incomplete || !a.Torn || a.Unreadable != 0 {
		t.Errorf("killed record: running=%v incomplete=%v torn=%v unreadable=%d", a.Running, a.Incomplete, a.Torn, a.Unreadable)
	}
	if a.Outcome.Status != events.Interrupted || a.InStep != "wait.ready" || a.Outcome.Failed != "wait.ready" {
		t.Errorf("killed record: status %q, in step %q, failed %q", a.Outcome.Status, a.InStep, a.Outcome.Failed)
	}
	if !strings.Contains(a.Outcome.Reason, "killed in step wait.ready") {
		t.Errorf("reason %q", a.Outcome.Reason)
	}
	if got := a.Steps[1].State(a); got != "interrupted" {
		t.Errorf("wait.ready reads %q", got)
	}
	if got := a.Steps[2].State(a); got != "not run" {
		t.Errorf("assert.coherent reads %q", got)
	}
	if len(a.Steps[1].Observations) == 0 {
		t.Error("the observations written before the kill are lost")
	}
	// Up to the last event written: the repeat at 22s was still held back.
	if a.Duration() != 17*time.Second {
		t.Errorf("duration up to the last event: %v", a.Duration())
	}
}

func TestLoadSkipsADamagedLine(t *testing.T) {
	root := t.TempDir()
	w, _ := Open(root, "glm5")
	evs := recordstest.Events(recordstest.Run{Backend: "x", Tokens: 1, P99: 1})
	emitAll(t, w, evs[:3])
	f, _ := os.OpenFile(filepath.Join(w.Dir(), EventsFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{not json\n")
	f.Close()
	a, err := Load(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Unreadable != 1 || a.Torn || len(a.Steps[0].Actions) != 1 {
		t.Errorf("unreadable %d torn %v actions %d", a.Unreadable, a.Torn, len(a.Steps[0].Actions))
	}
}

func TestAnEmptyRecordReadsAsKilledBeforeStart(t *testing.T) {
	root := t.TempDir()
	w, _ := Open(root, "glm5")
	w.Close()
	a, err := Load(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome.Status != events.Interrupted || !strings.Contains(a.Outcome.Reason, "before it recorded anything") {
		t.Errorf("outcome %+v", a.Outcome)
	}
	if _, err := Load(filepath.Join(root, "nope")); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
}

func TestEmitAfterCloseIsReported(t *testing.T) {
	w, _ := Open(t.TempDir(), "glm5")
	w.Close()
	w.Emit(events.Event{Type: events.Warning, Message: "late"})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "after the record") {
		t.Errorf("Close after a late event: %v", err)
	}
}

func TestWriteErrorIsKeptForClose(t *testing.T) {
	w, _ := Open(t.TempDir(), "glm5")
	w.f.Close() // the file goes away under the writer
	w.Emit(events.Event{Type: events.Warning, Message: "lost"})
	w.Emit(events.Event{Type: events.Warning, Message: "lost too"})
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "write record of attempt 1") {
		t.Errorf("Close: %v", err)
	}
}

func TestListAndPlans(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"zeta", "glm5", "glm5"} {
		w, err := Open(root, p)
		if err != nil {
			t.Fatal(err)
		}
		emitAll(t, w, recordstest.Events(recordstest.Run{Backend: "x", Tokens: 1, P99: 1})[:1])
	}
	os.Mkdir(filepath.Join(root, "attempts", "glm5", "notes"), 0o700) // not an attempt
	plans, err := Plans(root)
	if err != nil || !slices.Equal(plans, []string{"glm5", "zeta"}) {
		t.Errorf("Plans = %v, %v", plans, err)
	}
	all, err := List(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range all {
		got = append(got, fmt.Sprintf("%s/%d", a.Plan, a.Number))
	}
	if !slices.Equal(got, []string{"glm5/1", "glm5/2", "zeta/1"}) {
		t.Errorf("List(all) = %v", got)
	}
	one, err := List(root, "zeta")
	if err != nil || len(one) != 1 {
		t.Errorf("List(zeta) = %d attempts, %v", len(one), err)
	}
	none, err := List(t.TempDir(), "")
	if err != nil || len(none) != 0 {
		t.Errorf("empty root: %d, %v", len(none), err)
	}
	_ = fs.ModePerm
}
