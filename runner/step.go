package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/steps"
	"lockstep/targets"
)

// Defaults a plan never has to write. Timeouts, intervals and the grace
// period come from the language's schema (plans.Language), which explain
// and the docs show too; these are the runner's own.
const (
	// watchEvery is how often launched processes are checked while a
	// step runs, so a death fails the step within a fraction of a second;
	// on a remote target each check is a round trip, so less often.
	watchEvery       = 100 * time.Millisecond
	watchEveryRemote = 250 * time.Millisecond
	// followEvery is how often followed logs are checked for growth
	// between intervals: locally a stat costs microseconds; on a remote
	// target each check runs a script there, so 5 a second, not 100.
	followEvery       = 10 * time.Millisecond
	followEveryRemote = 200 * time.Millisecond
	// tailLines is how much of a log a dead process's evidence shows.
	tailLines = 40
)

// stepRun is one step in progress.
type stepRun struct {
	r      *run
	st     *plans.Step
	ev     events.Step
	t      targets.Target
	start  time.Time
	probes []namedProbe
	values map[string]cty.Value // probe name -> last observed value
	errs   map[string]error     // probe name -> why it could not be read
	self   map[string]cty.Value
	// followers are the logs this step follows: its log probes and, for a
	// launch, its own log.
	followers []*probes.Follower
	logWatch  *logWatch // wakes the wait when a follower's file may have changed
	own       *launched // the process this launch started (or adopted)
	// adoption says where an adopted launch's process came from (adopt.go).
	adoption *adoption
	// served is who answered each http probe and the load (served.go);
	// foreignTold the answers not of this attempt already warned of.
	served      map[string]events.Served
	foreignTold map[string]bool
	ownLog      *probes.Follower
	// following says why the launch is neither alive nor dead: its
	// command exited 0 and the daemon it left is being made sure of.
	following string
	// logVal is self.log as of logRead bytes of ownLog: made again only
	// when the log grew (a value of 8 MiB costs milliseconds per turn).
	logVal  cty.Value
	logRead int64
	// cfg is the step's attributes decoded by its kind (steps.Kind.Decode,
	// the decoder validate used); shownCfg is cfg as the record keeps it.
	cfg      steps.Config
	shownCfg map[string]string
	// progressWarned is whether the progress expression's error was
	// reported: once per step.
	progressWarned bool
	history        []events.Sample
	last           string // the last observation summary emitted
	lastAt         time.Time
	// limit is the first limit the step's expressions met (plans'
	// limits): the step fails with it.
	limit    error
	cmdOut   *targets.Result // the step's own command, as it last ran
	metrics  map[string]float64
	stats    map[string]events.MetricStats
	notes    map[string]string
	requests []events.Request
	levels   []events.Level    // a sweep's or a search's
	best     *int              // the best of levels
	load     map[string]string // a load's decoded config, as the record keeps it (recordedConfig)
	// inputs redacts the step's errors: its action's sensitive inputs,
	// then the guard; probeInputs the same for each probe.
	inputs      *redactor
	probeInputs map[string]*redactor
	// probeConfigs is each probe's config as the record keeps it.
	probeConfigs map[string]map[string]string

	// left is what the step's command left running (leftover.go).
	left []events.LeftProcess
	// probeWarned names the probes that were found to leave processes
	// running: each is warned of once per step.
	probeWarned map[string]bool
}

type namedProbe struct {
	name   string
	p      probes.Probe
	answer *answerCheck // an http probe's: who answered it (served.go)
}

func (r *run) stepEvent(i int, st *plans.Step) events.Step {
	ev := events.Step{
		Addr:        st.Kind + "." + st.Name,
		Kind:        st.Kind,
		Name:        st.Name,
		Index:       i,
		Count:       len(r.o.Plan.Steps),
		Target:      st.Target,
		Description: st.Description,
		Always:      st.Always,
	}
	// Before the run, the timeout as far as it is known: one that reads
	// an earlier step's output (or that does not decode: the step will
	// say so) is the kind's default until the step starts.
	if k, ok := steps.Lookup(st.Kind); ok {
		ev.Timeout = time.Duration(k.Defaults().Step().Timeout)
	}
	if e, ok := st.Attrs["timeout"]; ok {
		timeout := &plans.Step{Kind: st.Kind, Target: st.Target, Attrs: map[string]hcl.Expression{"timeout": e}}
		if cfg, _, err := r.o.Scope.StepConfig(timeout, nil); err == nil {
			ev.Timeout = time.Duration(cfg.Step().Timeout)
		}
	}
	return ev
}

// stepConfig decodes the step's attributes into its kind's config as
// validate did (plans.Scope.StepConfig), each evaluated as the action
// sees it; shown is the config as the record keeps it, a sensitive value
// hidden. An attribute that does not evaluate or decode is the step's
// error: the run does not go on with a default the plan did not ask for.
func (s *stepRun) stepConfig() (steps.Config, map[string]string, error) {
	cfg, sensitive, err := s.r.o.Scope.StepConfig(s.st, map[string]cty.Value{"step": s.r.stepRoot(s.st.Reads.Steps())})
	var ee *plans.EvalError
	if errors.As(err, &ee) {
		// hcl may quote a value it could not use: guarded.
		return nil, nil, fmt.Errorf("%s: %s", ee.Attr, s.r.guard.text(diagText(ee.Diags)))
	}
	if err != nil {
		// Each attribute named, also where its error names only the value.
		var msgs []string
		for _, e := range schema.Errors(err) {
			msg := e.Error()
			var ae *schema.AttrError
			if errors.As(e, &ae) && !strings.HasPrefix(msg, ae.Attr+" ") {
				msg = ae.Attr + ": " + msg
			}
			msgs = append(msgs, msg)
		}
		return nil, nil, errors.New(s.r.guard.text(strings.Join(msgs, "; ")))
	}
	shown := schema.Shown(cfg)
	// Sensitive by their marks, as the action shows them (Action.Command):
	// the guard, which scrubs what the world said, would hide a value that
	// merely equals a secret ("true").
	for _, name := range sensitive {
		shown[name] = redacted
	}
	return cfg, shown, nil
}

// step runs one step: its action, then its confirm loop. ctx bounds the
// step; outer is the attempt's context, whose end means interrupted.
func (r *run) step(ctx, outer context.Context, i int, st *plans.Step, ev events.Step) (out events.Outcome) {
	s := &stepRun{r: r, st: st, ev: ev, start: time.Now(), values: map[string]cty.Value{}, errs: map[string]error{}, self: map[string]cty.Value{},
		inputs: &redactor{g: r.guard}, probeInputs: map[string]*redactor{}, probeConfigs: map[string]map[string]string{},
		served: map[string]events.Served{}, foreignTold: map[string]bool{}}
	cfg, shown, cfgErr := s.stepConfig()
	if cfgErr == nil {
		s.cfg, s.shownCfg = cfg, shown
		ev.Timeout = time.Duration(cfg.Step().Timeout)
		s.ev = ev
	}
	r.emit(events.Event{Type: events.StepStarted, Step: &ev})
	defer func() {
		// No connection a probe opened outlives its step: the next step
		// dials afresh (on an SSH target, a new forwarded channel).
		r.http.CloseIdle()
		out.Duration = time.Since(s.start)
		if !out.Status.OK() {
			s.outputEvidence(&out)
			if out.Status != events.Interrupted {
				s.diedMeanwhile(ctx, &out)
			}
		}
		if out.Metrics == nil && len(s.metrics) > 0 {
			out.Metrics = s.metrics
		}
		if len(s.stats) > 0 {
			out.Stats = s.stats
		}
		if len(s.notes) > 0 {
			out.Notes = s.notes
		}
		out.Requests = s.requests
		out.Levels, out.Best = s.levels, s.best
		out.Load = s.load
		out.Left = s.left
		if len(s.served) > 0 {
			out.ServedBy = s.served
		}
		if s.cfg != nil {
			// The last value progress took is the one the step ran with.
			if p := s.cfg.Step().Progress; p.Value != nil {
				s.shownCfg["progress"] = p.Show()
			}
			out.Config = s.shownCfg
		}
		r.record(s)
		out.Outputs = s.outputs()
		out.Probes = s.probeConfigs
		r.emit(events.Event{Type: events.StepFinished, Step: &ev, Outcome: &out})
		s.endWatch() // once told: the step is decided, its watch ends
	}()

	if cfgErr != nil {
		return s.errored(cfgErr)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if ev.Timeout > 0 {
		var c2 context.CancelFunc
		sctx, c2 = context.WithDeadline(sctx, s.start.Add(ev.Timeout))
		defer c2()
	}
	stopWatch := r.watch(sctx, cancel)
	defer stopWatch()

	t, err := r.target(st.Target)
	if err != nil {
		return s.errored(err)
	}
	s.t = t
	// Probes start before the action, so a log probe reads what the
	// action makes the log say; a probe that reads self (pid = self.pid)
	// starts after it, once self is known.
	if err := s.makeProbes(sctx, false); err != nil {
		return s.errored(err)
	}
	if out, done := s.act(sctx, outer); done {
		return out
	}
	if err := s.makeProbes(sctx, true); err != nil {
		return s.errored(err)
	}
	return s.confirm(sctx, outer, s.once())
}

// ended explains why a step's context ended: interrupted, a watched
// process died, or the timeout passed.
func (s *stepRun) ended(ctx, outer context.Context) events.Outcome {
	if outer.Err() != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errProcessDied) {
		return events.Outcome{Status: events.Interrupted, Reason: interruptReason(outer), Evidence: s.evidence(nil)}
	}
	var died *diedError
	if errors.As(context.Cause(ctx), &died) {
		ev := s.evidence(nil)
		ev.LogTail = map[string][]string{died.l.addr: died.tail}
		return events.Outcome{Status: events.Failed, Reason: died.Error(), Evidence: ev}
	}
	return events.Outcome{Status: events.TimedOut, Reason: fmt.Sprintf("timed out after %s", s.ev.Timeout), Evidence: s.evidence(nil)}
}

// diedMeanwhile adds to a failed step's outcome the launches found dead
// at its end. A probe that met a crashing server (an EOF) can fail the
// step a moment before the server has exited, and the death is the
// reason worth reading: its status and its log's last lines are told
// too. The launches are looked at for up to diedSettle, until one is
// found dead.
func (s *stepRun) diedMeanwhile(ctx context.Context, out *events.Outcome) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), diedSettle+5*time.Second)
	defer cancel()
	var watched []*launched
	for _, l := range s.r.launches() {
		if l.addr != s.ev.Addr && !strings.Contains(out.Reason, l.addr+" (") {
			watched = append(watched, l) // not its own launch, nor a death the reason tells
		}
	}
	if len(watched) == 0 {
		return
	}
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for until := time.Now().Add(diedSettle); ; {
		found := false
		for _, l := range watched {
			st, err := s.r.state(ictx, l)
			if err != nil || st.Alive || st.following != "" {
				continue
			}
			found = true
			d := &diedError{l: l, state: st.ProcessState}
			out.Reason += "; meanwhile " + d.Error()
			if out.Evidence == nil {
				out.Evidence = &events.Evidence{}
			}
			if out.Evidence.LogTail == nil {
				out.Evidence.LogTail = map[string][]string{}
			}
			out.Evidence.LogTail[l.addr] = s.r.tail(ictx, l)
		}
		if found || time.Now().After(until) {
			return
		}
		<-tick.C
	}
}

// diedSettle is how long a failed step waits for a launch to be seen
// dead, when none is yet: a server that dropped a connection as it
// crashed exits a moment later.
const diedSettle = time.Second

// errored is a step that could not act or evaluate. The error may quote
// what the world said (a remote script's stderr): it is guarded, and an
// action's sensitive inputs are shown as they were shown.
func (s *stepRun) errored(err error) events.Outcome {
	return events.Outcome{Status: events.Errored, Reason: s.inputs.text(err.Error()), Evidence: s.evidence(nil)}
}

// evalContext is what the step's expressions see: the plan's variables and
// locals, earlier steps' outputs, this step's probes and self.
func (s *stepRun) evalContext(scope *plans.Scope) *hcl.EvalContext {
	probeVals := map[string]cty.Value{}
	for _, np := range s.probes {
		v, ok := s.values[np.name]
		if !ok || v == cty.NilVal {
			v = cty.DynamicVal
		}
		probeVals[np.name] = v
	}
	extra := map[string]cty.Value{
		"step":  s.r.stepRoot(s.st.Reads.Steps()),
		"probe": cty.ObjectVal(probeVals),
		"self":  cty.ObjectVal(s.selfValues()),
	}
	return scope.EvalContext(extra)
}

func (s *stepRun) selfValues() map[string]cty.Value {
	self := map[string]cty.Value{}
	for k, v := range s.self {
		self[k] = v
	}
	if s.ownLog != nil {
		if n := s.ownLog.Read(); s.logVal == cty.NilVal || n != s.logRead {
			s.logVal, s.logRead = cty.StringVal(s.ownLog.Text()), n
		}
		self["log"] = s.logVal
	}
	if len(s.metrics) > 0 || len(s.stats) > 0 {
		self["metrics"] = metricsValue(s.metrics, s.stats)
	}
	if len(s.levels) > 0 {
		self["levels"] = levelsValue(s.levels)
		self["best"] = cty.NullVal(cty.DynamicPseudoType)
		if s.best != nil {
			self["best"] = levelValue(s.levels[*s.best])
		}
	}
	return self
}

// levelsValue is self.levels: each level as {concurrency, rate, metrics,
// good}, a tuple, since levels may report different metrics (a
// percentile absent where nothing succeeded).
func levelsValue(levels []events.Level) cty.Value {
	vals := make([]cty.Value, len(levels))
	for i, l := range levels {
		vals[i] = levelValue(l)
	}
	return cty.TupleVal(vals)
}

func levelValue(l events.Level) cty.Value {
	good := cty.NullVal(cty.Bool)
	if l.Good != nil {
		good = cty.BoolVal(*l.Good)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"concurrency": cty.NumberIntVal(int64(l.Concurrency)),
		"rate":        cty.NumberFloatVal(l.Rate),
		"metrics":     metricsValue(l.Metrics, nil),
		"good":        good,
	})
}

// metricsValue is self.metrics: NAME -> number, or for a repeated
// command NAME -> {values, median, min, max, stddev}.
func metricsValue(m map[string]float64, stats map[string]events.MetricStats) cty.Value {
	out := map[string]cty.Value{}
	for k, v := range m {
		out[k] = cty.NumberFloatVal(v)
	}
	for k, st := range stats {
		vals := make([]cty.Value, len(st.Values))
		for i, v := range st.Values {
			vals[i] = cty.NumberFloatVal(v)
		}
		list := cty.ListValEmpty(cty.Number)
		if len(vals) > 0 {
			list = cty.ListVal(vals)
		}
		out[k] = cty.ObjectVal(map[string]cty.Value{
			"values": list,
			"median": cty.NumberFloatVal(st.Median),
			"min":    cty.NumberFloatVal(st.Min),
			"max":    cty.NumberFloatVal(st.Max),
			"stddev": cty.NumberFloatVal(st.Stddev),
		})
	}
	return cty.ObjectVal(out)
}

// record keeps a finished step's self outputs for later steps.
func (r *run) record(s *stepRun) {
	r.outputs[s.ev.Addr] = cty.ObjectVal(s.selfValues())
}

// outputs renders the self outputs worth keeping in the record.
func (s *stepRun) outputs() map[string]string {
	out := map[string]string{}
	for k, v := range s.self {
		switch k {
		case "log", "stdout", "stderr", "json":
			continue
		}
		out[k] = Render(v) // lockstep's own values, marked where sensitive
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *stepRun) makeProbes(ctx context.Context, readingSelf bool) error {
	ectx := s.r.o.Scope.EvalContext(map[string]cty.Value{"step": s.r.stepRoot(s.st.Reads.Steps()), "self": cty.ObjectVal(s.selfValues())})
	for _, pb := range s.st.Probes {
		if pb.ReadsSelf() != readingSelf {
			continue
		}
		attrs := map[string]cty.Value{}
		red := &redactor{g: s.r.guard}
		s.probeInputs[pb.Name] = red
		// shown is how a sensitive attribute shows (plans.Show): what the
		// record keeps of it.
		shown := map[string]string{}
		for name, expr := range pb.Attrs {
			v, diags := expr.Value(ectx)
			if diags.HasErrors() {
				return fmt.Errorf("probe %s: %s", pb.Name, s.r.guard.text(diagText(diags)))
			}
			s.noteInput(red, expr, ectx, v)
			if plans.IsSensitive(v) {
				sh, diags := plans.Show(expr, ectx)
				if diags.HasErrors() {
					sh.Text = redacted
				}
				shown[name] = sh.Text
			}
			v, _ = v.UnmarkDeep()
			attrs[name] = v
		}
		kind, ok := probes.Lookup(pb.Kind)
		if !ok {
			return fmt.Errorf("probe %s: no probe kind %q", pb.Name, pb.Kind)
		}
		// The decoder validate used: what validated runs.
		cfg := kind.Defaults()
		if err := schema.DecodeChecked(plans.ProbeValues(pb, attrs), cfg); err != nil {
			return fmt.Errorf("probe %s: %s", pb.Name, red.text(joinLine(err)))
		}
		s.probeConfigs[pb.Name] = recordedConfig(cfg, shown, red)
		spec := probes.Spec{Reads: pb.Reads, HTTP: s.r.http}
		if pb.Step != "" {
			l, err := s.r.stepRef(pb.Step)
			if err != nil {
				return fmt.Errorf("probe %s: %w", pb.Name, err)
			}
			spec.Launch = l
		}
		if pb.Since != "" {
			l, err := s.r.stepRef(pb.Since)
			if err != nil {
				return fmt.Errorf("probe %s: %w", pb.Name, err)
			}
			spec.Since = l
		}
		p, err := cfg.New(ctx, s.t, spec)
		if err != nil {
			return fmt.Errorf("probe %s: %s", pb.Name, red.text(err.Error()))
		}
		if f, ok := p.(probes.Following); ok {
			s.followers = append(s.followers, f.Follower())
		}
		s.probes = append(s.probes, namedProbe{pb.Name, p, probeAnswer(cfg)})
	}
	return nil
}

// joinLine is the errors of a config's decoding on one line.
func joinLine(err error) string {
	var parts []string
	for _, e := range schema.Errors(err) {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// recordedConfig is a probe's or a load's decoded config as its step's
// record keeps it (schema.Shown): each sensitive attribute as plans.Show
// shows it (shown), the rest through red, as the probe's or load's errors
// are.
func recordedConfig(cfg any, shown map[string]string, red *redactor) map[string]string {
	out := schema.Shown(cfg)
	for name, text := range out {
		if sh, ok := shown[name]; ok {
			text = sh
		}
		out[name] = red.text(text)
	}
	for name, sh := range shown {
		if _, ok := out[name]; !ok {
			out[name] = red.text(sh) // set, sensitive, and shown as "" (a null)
		}
	}
	return out
}

// evalString evaluates, in ectx, an attribute that an action uses (a
// command, a path): the real value for the action, and the value as shown,
// with sensitive parts replaced (plans.Show). The step's errors then show
// it as shown, and the guard learns the hidden parts.
func (s *stepRun) evalString(expr hcl.Expression, ectx *hcl.EvalContext) (real, shown string, err error) {
	real, sensitive, err := evalText(expr, ectx)
	if err != nil || !sensitive {
		return real, real, err
	}
	sh, diags := plans.Show(expr, ectx)
	if diags.HasErrors() {
		sh = plans.Shown{Text: redacted, Hidden: []string{real}}
	}
	s.inputs.addInput(real, sh)
	return real, sh.Text, nil
}

// noteInput tells red how a probe's or a load's input v (from expr) is
// shown, when it holds something sensitive: a string (a URL) as a whole,
// a map (headers, env) value by value.
func (s *stepRun) noteInput(red *redactor, expr hcl.Expression, ectx *hcl.EvalContext, v cty.Value) {
	if !plans.IsSensitive(v) {
		return
	}
	if real, _, err := plain(v); err == nil {
		sh, diags := plans.Show(expr, ectx)
		if diags.HasErrors() {
			sh = plans.Shown{Text: redacted, Hidden: []string{real}}
		}
		red.addInput(real, sh)
		return
	}
	// A map written out (headers = { Authorization = "Bearer ${...}" }):
	// each element as its own expression shows it.
	if obj, ok := expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range obj.Items {
			iv, diags := item.ValueExpr.Value(ectx)
			if diags.HasErrors() || !plans.IsSensitive(iv) {
				continue
			}
			if real, _, err := plain(iv); err == nil {
				if sh, diags := plans.Show(item.ValueExpr, ectx); !diags.HasErrors() {
					red.addInput(real, sh)
				}
				continue
			}
			s.noteInput(red, item.ValueExpr, ectx, iv) // a nested map
		}
		return
	}
	// Any other map: each sensitive element whole.
	uv, _ := v.Unmark()
	if uv.IsNull() || !uv.IsKnown() || !uv.CanIterateElements() {
		return
	}
	for it := uv.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !plans.IsSensitive(e) {
			continue
		}
		if real, _, err := plain(e); err == nil {
			red.addInput(real, plans.Shown{Text: redacted, Hidden: []string{real}})
		}
	}
}

// outputLines is how much of a failed command's stdout and stderr its
// evidence shows, each.
const outputLines = 20

// outputEvidence adds to a step that did not confirm the end of what its
// commands wrote: its own command's, and each exec probe's whose last run
// exited non-zero.
func (s *stepRun) outputEvidence(out *events.Outcome) {
	tails := map[string][]string{}
	add := func(name string, b []byte) {
		if t := outputTail(b); len(t) > 0 {
			tails[name] = s.r.guard.lines(t) // what the command said
		}
	}
	if s.cmdOut != nil {
		add("self.stdout", s.cmdOut.Stdout)
		add("self.stderr", s.cmdOut.Stderr)
	}
	for _, pb := range s.st.Probes {
		v, ok := s.values[pb.Name]
		if pb.Kind != "exec" || !ok || s.errs[pb.Name] != nil || !v.IsWhollyKnown() || v.IsNull() {
			continue
		}
		if code := v.GetAttr("exit_code"); code.Equals(cty.Zero).True() {
			continue
		}
		add("probe."+pb.Name+".stdout", []byte(v.GetAttr("stdout").AsString()))
		add("probe."+pb.Name+".stderr", []byte(v.GetAttr("stderr").AsString()))
	}
	if len(tails) == 0 {
		return
	}
	if out.Evidence == nil {
		out.Evidence = &events.Evidence{}
	}
	out.Evidence.Output = tails
}

// outputTail is the last lines of a command's output as a terminal shows
// them: a line redrawn with \r (a progress bar) as its last drawing, each
// line cut to a readable length.
func outputTail(b []byte) []string {
	lines := probes.TailOf(string(b), outputLines)
	for i, l := range lines {
		lines[i] = cut(l, 300)
	}
	return lines
}
