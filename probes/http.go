package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"lockstep/schema"
	"lockstep/targets"
)

// HTTP is the http probe: it sends one request each turn from the
// target's side and reads the answer.
type HTTP struct {
	URL     string            `hcl:"url,required" doc:"URL; 127.0.0.1 is the target's loopback"`
	Method  string            `hcl:"method" doc:"HTTP method" default:"GET, or POST with a body or json"`
	Headers map[string]string `hcl:"headers" doc:"request headers, a map of strings"`
	Body    string            `hcl:"body" doc:"request body as text"`
	JSON    cty.Value         `hcl:"json" doc:"request body as a value sent as JSON (sets Content-Type)"`
	Timeout time.Duration     `hcl:"timeout" doc:"how long one request may take"`
	// FollowRedirects off reports what the URL answered, not where it
	// sends: a login page's 200 must not stand for the 302 of the URL.
	FollowRedirects bool `hcl:"follow_redirects" doc:"follow redirects (up to 10) and report the last answer; otherwise the outputs are the first answer's"`
	// RequireOwn is read by the runner, which alone knows the attempt's
	// processes (served_by).
	RequireOwn bool `hcl:"require_own" doc:"to a loopback address, once this attempt has launched or adopted a server: an answer from a process that is not of this attempt fails the step (false: it is reported in the evidence and the run's summary)"`
}

// httpDefaults is the http probe's config before its block is read.
func httpDefaults() *HTTP { return &HTTP{Timeout: 10 * time.Second, RequireOwn: true} }

func httpKind() Kind {
	num, str := cty.Number, cty.String
	return Kind{
		Name: "http", Doc: "sends an HTTP request from the target's side",
		Defaults: func() Config { return httpDefaults() },
		Outputs: []schema.Output{
			{Name: "status", Type: num, Doc: "status code of the answer (a redirect's 301, 302... unless follow_redirects)"},
			{Name: "body", Type: str, Doc: "response body"},
			{Name: "json", Type: cty.DynamicPseudoType, Doc: "response body parsed as JSON, null if it is not JSON"},
			{Name: "headers", Type: cty.Map(str), Doc: "response headers, names in lower case"},
			{Name: "location", Type: str, Doc: "the answer's Location header as sent (where a redirect points), \"\" when it has none"},
			{Name: "latency_ms", Type: num, Doc: "time to the full response"},
			{Name: "served_by", Type: ServedType, Doc: "to a loopback address: who answered, the process holding the listening socket (pid, pgid, command, and step: the step of this attempt it belongs to, \"\" for none); null otherwise"},
		},
	}
}

func (c *HTTP) Check() error {
	var errs []error
	if c.Timeout <= 0 {
		errs = append(errs, &schema.AttrError{Attr: "timeout", Err: fmt.Errorf("must be longer than zero")})
	}
	if c.JSON != cty.NilVal && !c.JSON.IsNull() && c.JSON.IsWhollyKnown() {
		if _, err := c.body(); err != nil {
			errs = append(errs, &schema.AttrError{Attr: "json", Err: err})
		}
	}
	return errors.Join(errs...)
}

// body is the request body: json's value as JSON when set, else body.
func (c *HTTP) body() ([]byte, error) {
	if c.JSON == cty.NilVal || c.JSON.IsNull() {
		return []byte(c.Body), nil
	}
	v, _ := c.JSON.UnmarkDeep()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, fmt.Errorf("cannot be sent as JSON: %w", err)
	}
	return b, nil
}

// method is the method sent: GET unless a body goes with it.
func (c *HTTP) method(body []byte) string {
	switch {
	case c.Method != "":
		return c.Method
	case len(body) > 0:
		return http.MethodPost
	}
	return http.MethodGet
}

// Summary gives the method sent, the timeout and the redirect policy.
func (c *HTTP) Summary() string {
	body, _ := c.body()
	redirects := "redirects not followed"
	if c.FollowRedirects {
		redirects = "follows up to 10 redirects"
	}
	return fmt.Sprintf("%s, timeout %s, %s", c.method(body), schema.ShowDuration(c.Timeout), redirects)
}

func (c *HTTP) New(_ context.Context, t targets.Target, s Spec) (Probe, error) {
	body, err := c.body()
	if err != nil {
		return nil, fmt.Errorf("json %w", err)
	}
	p := &httpProbe{json: s.reads("json"), url: c.URL, body: body, method: c.method(body), headers: map[string]string{}}
	for k, v := range c.Headers {
		p.headers[k] = v
	}
	if c.JSON != cty.NilVal && !c.JSON.IsNull() {
		if _, set := p.headers["Content-Type"]; !set {
			p.headers["Content-Type"] = "application/json"
		}
	}
	pools := s.HTTP
	if pools == nil {
		pools = NewHTTPClients()
	}
	p.client = &http.Client{Timeout: c.Timeout, Transport: pools.transport(t)}
	if !c.FollowRedirects {
		p.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return p, nil
}

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

// ServedType is the type of an http probe's served_by, which the runner
// sets: it alone knows the attempt's processes.
var ServedType = cty.Object(map[string]cty.Type{"pid": cty.Number, "pgid": cty.Number, "command": cty.String, "step": cty.String})

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
