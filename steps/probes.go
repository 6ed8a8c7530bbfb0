package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/schema"
	"lockstep/targets"
)

// Launch is what a launch step left for later steps to refer to.
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

// ProbeSpec is a probe block with its attributes evaluated.
type ProbeSpec struct {
	Kind, Name string
	Attrs      map[string]cty.Value
	Launch     *Launch // set when the block says step = step.launch.NAME
	Since      *Launch // set when the block says since = step.launch.NAME
	// Reads names the outputs the step's expressions read; a probe may
	// skip gathering the others (they are null). Nil means all.
	Reads map[string]bool
	// HTTP is where an http probe takes its target's connections; nil
	// gives the probe a pool of its own, which nobody closes.
	HTTP *HTTPClients
}

// reads reports whether the step reads any of the outputs named.
func (s ProbeSpec) reads(outputs ...string) bool {
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

type probeMaker func(ctx context.Context, t targets.Target, s ProbeSpec) (Probe, error)

func probeMakers() map[string]probeMaker {
	return map[string]probeMaker{
		"exec":    newExecProbe,
		"http":    newHTTPProbe,
		"log":     newLogProbe,
		"process": newProcessProbe,
		"port":    newPortProbe,
		"file":    newFileProbe,
		"gpu":     newGPUProbe,
	}
}

// NewProbe makes the probe a block describes, on target t. A log probe
// starts following here: what it reads is what is written from now on (or
// since the launch it names).
func NewProbe(ctx context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	mk, ok := probeMakers()[s.Kind]
	if !ok {
		return nil, fmt.Errorf("no probe kind %q", s.Kind)
	}
	return mk(ctx, t, s)
}

// Attribute access on evaluated block attributes.

func attrString(a map[string]cty.Value, name, def string) (string, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if !v.IsKnown() || v.Type() != cty.String {
		return "", fmt.Errorf("%s must be a string", name)
	}
	return v.AsString(), nil
}

func attrInt(a map[string]cty.Value, name string, def int) (int, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() == cty.String {
		n, err := strconv.Atoi(v.AsString())
		if err != nil {
			return 0, fmt.Errorf("%s must be a whole number, not %q", name, v.AsString())
		}
		return n, nil
	}
	if v.Type() != cty.Number {
		return 0, fmt.Errorf("%s must be a number", name)
	}
	f, _ := v.AsBigFloat().Float64()
	return int(f), nil
}

func attrFloat(a map[string]cty.Value, name string, def float64) (float64, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() != cty.Number {
		return 0, fmt.Errorf("%s must be a number", name)
	}
	f, _ := v.AsBigFloat().Float64()
	return f, nil
}

func attrBool(a map[string]cty.Value, name string, def bool) (bool, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() != cty.Bool {
		return false, fmt.Errorf("%s must be true or false", name)
	}
	return v.True(), nil
}

func attrDuration(a map[string]cty.Value, name string, def time.Duration) (time.Duration, error) {
	s, err := attrString(a, name, "")
	if err != nil || s == "" {
		return def, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

func attrStringMap(a map[string]cty.Value, name string) (map[string]string, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return nil, nil
	}
	if !v.CanIterateElements() {
		return nil, fmt.Errorf("%s must be a map of strings", name)
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if k.Type() != cty.String {
			return nil, fmt.Errorf("%s must be a map of strings", name)
		}
		s, err := toText(e)
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %w", name, k.AsString(), err)
		}
		out[k.AsString()] = s
	}
	return out, nil
}

// toText renders a primitive as a string the way HCL converts it.
func toText(v cty.Value) (string, error) {
	if v.IsNull() {
		return "", nil
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), nil
	case cty.Number:
		return v.AsBigFloat().Text('f', -1), nil
	case cty.Bool:
		return strconv.FormatBool(v.True()), nil
	}
	return "", fmt.Errorf("must be a string, number or bool")
}

// JSONValue turns JSON text into a plan value; text that is not JSON is null.
func JSONValue(data []byte) cty.Value {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || !json.Valid(data) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	if err := schema.CheckJSON(data); err != nil {
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

// ToJSON renders a plan value as JSON, for request bodies.
func ToJSON(v cty.Value) ([]byte, error) {
	return ctyjson.Marshal(v, v.Type())
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

// exec

type execProbe struct {
	t   targets.Target
	cmd targets.Command
	// left is what the observations since Left last asked left running,
	// stopped since; leftErr the first error looking or stopping gave.
	left    []targets.ProcessInfo
	leftErr error
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

var _ Leaving = (*execProbe)(nil)

// leftStopGrace is how long what a probe's command left running has
// between SIGTERM and SIGKILL.
const leftStopGrace = time.Second

// leftWait bounds the look for what a probe's command left, and its stop.
const leftWait = 10 * time.Second

func newExecProbe(_ context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	line, err := attrString(s.Attrs, "command", "")
	if err != nil {
		return nil, err
	}
	env, err := attrStringMap(s.Attrs, "env")
	if err != nil {
		return nil, err
	}
	return &execProbe{t: t, cmd: targets.Command{Line: line, Env: env}}, nil
}

func (p *execProbe) Observe(ctx context.Context) (cty.Value, error) {
	r, err := p.t.Run(ctx, p.cmd)
	p.stopLeft(ctx, r)
	if err != nil {
		return cty.NilVal, err
	}
	return CommandValue(r), nil
}

// stopLeft stops at once what the command of r left running, and keeps
// it for Left.
func (p *execProbe) stopLeft(ctx context.Context, r targets.Result) {
	if r.Mark == "" {
		return
	}
	owner := r.Owned()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leftWait)
	defer cancel()
	ms, err := p.t.Members(lctx, owner)
	if err == nil && len(ms) > 0 {
		err = p.t.Stop(lctx, owner, leftStopGrace)
	}
	p.left = append(p.left, ms...)
	if p.leftErr == nil && !errors.Is(err, targets.ErrDisconnected) {
		// A dropped connection is the observation's error already.
		p.leftErr = err
	}
}

func (p *execProbe) Left() ([]targets.ProcessInfo, error) {
	ms, err := p.left, p.leftErr
	p.left, p.leftErr = nil, nil
	return ms, err
}

// CommandValue is a finished command as a plan sees it.
func CommandValue(r targets.Result) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"exit_code":   cty.NumberIntVal(int64(r.ExitCode)),
		"stdout":      cty.StringVal(string(r.Stdout)),
		"stderr":      cty.StringVal(string(r.Stderr)),
		"json":        JSONValue(r.Stdout),
		"duration_ms": cty.NumberFloatVal(float64(r.Duration.Microseconds()) / 1000),
	})
}

// http

// HTTPClients keeps one connection pool (an http.Transport) per target for
// a run's http probes. Each probe had its own before, and each kept its
// idle connection open for 30 seconds after its step: a plan of a
// thousand steps held a thousand sockets, and on an SSH target as many
// forwarded channels. The runner closes the idle connections after each
// step (CloseIdle), so none outlives the step that used it.
type HTTPClients struct {
	mu sync.Mutex
	m  map[targets.Target]*http.Transport
}

// NewHTTPClients returns an empty set of pools.
func NewHTTPClients() *HTTPClients {
	return &HTTPClients{m: map[targets.Target]*http.Transport{}}
}

// transport is t's pool, made on first use. It dials from the target's
// side and uses no proxy from the environment: 127.0.0.1 is the target's
// loopback.
func (c *HTTPClients) transport(t targets.Target) *http.Transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	tr, ok := c.m[t]
	if !ok {
		tr = &http.Transport{
			DialContext:         t.Dial,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		}
		c.m[t] = tr
	}
	return tr
}

// CloseIdle closes every connection not carrying a request.
func (c *HTTPClients) CloseIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tr := range c.m {
		tr.CloseIdleConnections()
	}
}

type httpProbe struct {
	// client is the target's pool with this probe's timeout and redirect
	// policy.
	client  *http.Client
	method  string
	url     string
	headers map[string]string
	body    []byte
	json    bool // the step reads json: parse the body each turn
}

func newHTTPProbe(_ context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	p := &httpProbe{json: s.reads("json")}
	var err error
	if p.url, err = attrString(s.Attrs, "url", ""); err != nil {
		return nil, err
	}
	if p.method, err = attrString(s.Attrs, "method", ""); err != nil {
		return nil, err
	}
	if p.headers, err = attrStringMap(s.Attrs, "headers"); err != nil {
		return nil, err
	}
	if p.headers == nil {
		p.headers = map[string]string{}
	}
	body, err := attrString(s.Attrs, "body", "")
	if err != nil {
		return nil, err
	}
	p.body = []byte(body)
	if j, ok := s.Attrs["json"]; ok && !j.IsNull() {
		if p.body, err = ToJSON(j); err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		if _, set := p.headers["Content-Type"]; !set {
			p.headers["Content-Type"] = "application/json"
		}
	}
	if p.method == "" {
		p.method = http.MethodGet
		if len(p.body) > 0 {
			p.method = http.MethodPost
		}
	}
	timeout, err := attrDuration(s.Attrs, "timeout", 10*time.Second)
	if err != nil {
		return nil, err
	}
	follow, err := attrBool(s.Attrs, "follow_redirects", false)
	if err != nil {
		return nil, err
	}
	pools := s.HTTP
	if pools == nil {
		pools = NewHTTPClients()
	}
	p.client = &http.Client{Timeout: timeout, Transport: pools.transport(t)}
	if !follow {
		// What the URL answered, not where it sends: a login page's 200
		// must not stand for the 302 of the URL probed.
		p.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return p, nil
}

func (p *httpProbe) Observe(ctx context.Context) (cty.Value, error) {
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, bytes.NewReader(p.body))
	if err != nil {
		return cty.NilVal, err
	}
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return cty.NilVal, shortNetError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return cty.NilVal, fmt.Errorf("reading the response: %w", err)
	}
	latency := time.Since(start)
	headers := map[string]cty.Value{}
	for k, v := range resp.Header {
		headers[strings.ToLower(k)] = cty.StringVal(strings.Join(v, ", "))
	}
	hv := cty.MapValEmpty(cty.String)
	if len(headers) > 0 {
		hv = cty.MapVal(headers)
	}
	jv := cty.NullVal(cty.DynamicPseudoType)
	if p.json {
		jv = JSONValue(body)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"status":     cty.NumberIntVal(int64(resp.StatusCode)),
		"body":       cty.StringVal(string(body)),
		"json":       jv,
		"headers":    hv,
		"location":   cty.StringVal(resp.Header.Get("Location")),
		"latency_ms": cty.NumberFloatVal(float64(latency.Microseconds()) / 1000),
	}), nil
}

// shortNetError keeps what a reader needs from a dial or request error:
// "connection refused" rather than the whole URL-wrapped chain.
func shortNetError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		msg := op.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return fmt.Errorf("%s %s: %s", op.Op, addrOf(op), msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in time")
	}
	return err
}

func addrOf(op *net.OpError) string {
	if op.Addr != nil {
		return op.Addr.String()
	}
	return ""
}

// log

type logProbe struct {
	f *Follower
	// What the step reads of the log: the text and its lines cost a copy
	// of up to 8 MiB (and a value per line) each time they are made.
	text, lines bool
	// val is the log as of read bytes of f: made again only when it grew.
	val  cty.Value
	read int64
}

func newLogProbe(ctx context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	p := &logProbe{text: s.reads("text"), lines: s.reads("lines")}
	if s.Launch != nil {
		p.f = FollowLaunch(t, s.Launch.Process(), 0)
		return p, nil
	}
	path, err := attrString(s.Attrs, "path", "")
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("a log probe needs path or step")
	}
	if l := s.Since; l != nil {
		fi, ok := l.Marks[Mark(t.Name(), path)]
		switch {
		case !ok:
			return nil, fmt.Errorf("since = step.%s: the state of %s was not recorded when that launch started (the path could not be known then, or its target not reached); drop since to read from this step's start", l.Addr, path)
		case !fi.Exists:
			p.f = FollowStart(t, path) // made after the launch started
		default:
			p.f = FollowAt(t, path, fi.ID, fi.Size)
		}
		return p, nil
	}
	if p.f, err = FollowFrom(ctx, t, path); err != nil {
		return nil, err
	}
	return p, nil
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

// process

type processProbe struct {
	t      targets.Target
	match  string
	pid    int
	launch *Launch
}

func newProcessProbe(_ context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	p := &processProbe{t: t, launch: s.Launch}
	var err error
	if p.match, err = attrString(s.Attrs, "match", ""); err != nil {
		return nil, err
	}
	if p.match != "" {
		if _, err := regexp.Compile(p.match); err != nil {
			return nil, fmt.Errorf("match: %w", err)
		}
	}
	if p.pid, err = attrInt(s.Attrs, "pid", 0); err != nil {
		return nil, err
	}
	if p.match == "" && p.pid == 0 && p.launch == nil {
		return nil, fmt.Errorf("a process probe needs match, pid or step")
	}
	return p, nil
}

func (p *processProbe) Observe(ctx context.Context) (cty.Value, error) {
	var pids []int
	switch {
	case p.launch != nil:
		proc := p.launch.Process()
		st, err := p.t.Inspect(ctx, proc)
		if err != nil {
			return cty.NilVal, err
		}
		if st.Alive {
			pids = []int{proc.PID}
		}
	case p.pid != 0:
		ps, err := p.t.Processes(ctx, "")
		if err != nil {
			return cty.NilVal, err
		}
		for _, pi := range ps {
			if pi.PID == p.pid && pi.State != "Z" {
				pids = []int{p.pid}
			}
		}
	default:
		ps, err := p.t.Processes(ctx, p.match)
		if err != nil {
			return cty.NilVal, err
		}
		for _, pi := range ps {
			if pi.State != "Z" {
				pids = append(pids, pi.PID)
			}
		}
	}
	sort.Ints(pids)
	return cty.ObjectVal(map[string]cty.Value{
		"alive": cty.BoolVal(len(pids) > 0),
		"pids":  intList(pids),
		"count": cty.NumberIntVal(int64(len(pids))),
	}), nil
}

// port

type portProbe struct {
	t    targets.Target
	host string
	port int
	// owners is whether the step reads who listens: finding out scans
	// every process's descriptors, which costs far more than the dial.
	owners bool
}

func newPortProbe(_ context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	p := &portProbe{t: t, owners: s.reads("pid", "pgid", "pids", "command")}
	var err error
	if p.port, err = attrInt(s.Attrs, "port", 0); err != nil {
		return nil, err
	}
	if p.port <= 0 || p.port > 65535 {
		return nil, fmt.Errorf("port must be from 1 to 65535, not %d", p.port)
	}
	if p.host, err = attrString(s.Attrs, "host", "127.0.0.1"); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *portProbe) Observe(ctx context.Context) (cty.Value, error) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, dialErr := p.t.Dial(dctx, "tcp", net.JoinHostPort(p.host, strconv.Itoa(p.port)))
	cancel()
	if dialErr == nil {
		conn.Close()
	} else if errors.Is(dialErr, targets.ErrDisconnected) {
		return cty.NilVal, dialErr
	}
	var ls []targets.Listener
	if p.owners {
		var err error
		if ls, err = p.t.Listeners(ctx, p.port); err != nil {
			return cty.NilVal, err
		}
	}
	var pids []int
	var first *targets.Listener
	seen := map[int]bool{}
	for i, l := range ls {
		if l.PID != 0 && !seen[l.PID] {
			seen[l.PID] = true
			pids = append(pids, l.PID)
			if first == nil {
				first = &ls[i]
			}
		}
	}
	pid, pgid, command := cty.NullVal(cty.Number), cty.NullVal(cty.Number), cty.NullVal(cty.String)
	if first != nil {
		pid, command = cty.NumberIntVal(int64(first.PID)), cty.StringVal(first.Command)
		pgid = cty.NumberIntVal(int64(first.PGID))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"open":    cty.BoolVal(dialErr == nil),
		"pid":     pid,
		"pgid":    pgid,
		"pids":    intList(pids),
		"command": command,
	}), nil
}

// file

type fileProbe struct {
	t    targets.Target
	path string
	// content and sum say whether the step reads them: a step that only
	// asks whether a file exists, or its size, does not read the file.
	content, sum bool
}

// maxFileContent bounds what a file probe reads into content.
const maxFileContent = 1 << 20

func newFileProbe(_ context.Context, t targets.Target, s ProbeSpec) (Probe, error) {
	path, err := attrString(s.Attrs, "path", "")
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("a file probe needs path")
	}
	return &fileProbe{t: t, path: path, content: s.reads("content"), sum: s.reads("sha256")}, nil
}

func (p *fileProbe) Observe(ctx context.Context) (cty.Value, error) {
	content, sum := cty.NullVal(cty.String), cty.NullVal(cty.String)
	var fi targets.FileInfo
	var err error
	switch {
	case p.content:
		var data []byte
		data, fi, err = p.t.ReadAt(ctx, p.path, 0, maxFileContent)
		if err != nil || !fi.Exists {
			break
		}
		content = cty.StringVal(string(data))
		if int64(len(data)) == fi.Size {
			h := sha256.Sum256(data)
			sum = cty.StringVal(hex.EncodeToString(h[:]))
		}
	case p.sum:
		var hexSum string
		hexSum, fi, err = p.t.SHA256(ctx, p.path)
		if err == nil && fi.Exists {
			sum = cty.StringVal(hexSum)
		}
	default:
		fi, err = p.t.Stat(ctx, p.path)
	}
	if err != nil {
		return cty.NilVal, err
	}
	if !fi.Exists {
		return cty.ObjectVal(map[string]cty.Value{
			"exists":  cty.False,
			"size":    cty.NullVal(cty.Number),
			"content": cty.NullVal(cty.String),
			"sha256":  cty.NullVal(cty.String),
		}), nil
	}
	return cty.ObjectVal(map[string]cty.Value{
		"exists":  cty.True,
		"size":    cty.NumberVal(new(big.Float).SetInt64(fi.Size)),
		"content": content,
		"sha256":  sum,
	}), nil
}
