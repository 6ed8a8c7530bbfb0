package loads_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
)

func runHTTP(t *testing.T, h loads.HTTP) loads.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := h.Run(ctx, nil, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// within fails the test unless lo <= m[name] <= hi.
func within(t *testing.T, m map[string]float64, name string, lo, hi float64) {
	t.Helper()
	v, ok := m[name]
	if !ok {
		t.Errorf("metric %s missing", name)
		return
	}
	if v < lo || v > hi {
		t.Errorf("%s = %v, want within [%v, %v]", name, v, lo, hi)
	}
}

func exactly(t *testing.T, m map[string]float64, name string, want float64) {
	t.Helper()
	within(t, m, name, want, want)
}

func TestHTTPClosedRequestsAndLatency(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	// 2 workers, 20 ms per answer: 100 requests/s at most, p50 near 20 ms.
	res := runHTTP(t, loads.HTTP{URL: srv.URL + "/?latency=20ms&size=100", Concurrency: 2, Requests: 60})
	m := res.Metrics
	exactly(t, m, "requests", 60)
	exactly(t, m, "errors", 0)
	if got := srv.Requests(); got != 60 {
		t.Errorf("server received %d requests, want 60", got)
	}
	within(t, m, "latency_p50_ms", 20, 40)
	within(t, m, "latency_mean_ms", 20, 45)
	within(t, m, "latency_max_ms", m["latency_p99_ms"], 1000)
	within(t, m, "requests_per_s", 45, 100.5)
	within(t, m, "duration_s", 0.6, 1.35)
	// Each response is a status line, a few headers and 100 bytes of body.
	within(t, m, "bytes_received", 60*(100+40), 60*(100+300))
	if res.Notes["model"] != "closed" {
		t.Errorf("model note = %q, want closed", res.Notes["model"])
	}
}

func TestHTTPDurationAndWarmup(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	res := runHTTP(t, loads.HTTP{URL: srv.URL + "/?latency=10ms", Concurrency: 1,
		Warmup: 300 * time.Millisecond, Duration: 400 * time.Millisecond})
	m := res.Metrics
	within(t, m, "duration_s", 0.4, 0.7)
	// About 30 warm-up requests reached the server and were not counted.
	sent := float64(srv.Requests())
	within(t, m, "requests", 10, sent-10)
	within(t, m, "requests_per_s", 40, 101)
}

func TestHTTPErrorsByKind(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	closed := freeAddr(t)
	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		metric  string
		want    float64
	}{
		{"404", srv.URL + "/?status=404", 0, "errors_status_4xx", 20},
		{"every 4th is 503", srv.URL + "/?status=503&every=4", 0, "errors_status_5xx", 5},
		{"reset", srv.URL + "/reset", 0, "errors_io", 20},
		{"refused", "http://" + closed + "/", 0, "errors_connect", 20},
		{"timeout", srv.URL + "/?latency=3s", 100 * time.Millisecond, "errors_timeout", 20},
	}
	kinds := []string{"errors_status_4xx", "errors_status_5xx", "errors_io", "errors_connect", "errors_timeout"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := runHTTP(t, loads.HTTP{URL: tt.url, Concurrency: 2, Requests: 20, Timeout: tt.timeout})
			m := res.Metrics
			exactly(t, m, "requests", 20)
			exactly(t, m, tt.metric, tt.want)
			exactly(t, m, "errors", tt.want)
			for _, k := range kinds {
				if k != tt.metric {
					exactly(t, m, k, 0)
				}
			}
			if len(res.Samples) == 0 {
				t.Errorf("no failing sample kept")
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v: failures must end requests fast", d)
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestHTTPOpenModelArrivals(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	// One arrival every 5 ms for 1 s: exactly 200, at t = 0, 5, ..., 995 ms.
	res := runHTTP(t, loads.HTTP{URL: srv.URL, Rate: 200, Duration: time.Second, Concurrency: 50})
	m := res.Metrics
	exactly(t, m, "requests", 200)
	exactly(t, m, "dropped", 0)
	exactly(t, m, "errors", 0)
	within(t, m, "requests_per_s", 180, 205)
	if res.Notes["model"] != "open" {
		t.Errorf("model note = %q, want open", res.Notes["model"])
	}
}

func TestHTTPOpenModelWarmup(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	// Arrivals every 5 ms: 60 in the 300 ms warm-up, not counted, then
	// exactly 100 in the measured 500 ms.
	res := runHTTP(t, loads.HTTP{URL: srv.URL, Rate: 200, Warmup: 300 * time.Millisecond, Duration: 500 * time.Millisecond, Concurrency: 50})
	m := res.Metrics
	exactly(t, m, "requests", 100)
	exactly(t, m, "dropped", 0)
	within(t, m, "duration_s", 0.49, 0.7)
	if got := srv.Requests(); got != 160 {
		t.Errorf("server received %d requests, want 60 warm-up and 100 measured", got)
	}
}

func TestHTTPOpenModelCountsDropped(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	// 1 connection, 1 queue slot, answers take 50 ms, arrivals every 5 ms:
	// most arrivals find the queue full.
	res := runHTTP(t, loads.HTTP{URL: srv.URL + "/?latency=50ms", Rate: 200, Requests: 100, Concurrency: 1})
	m := res.Metrics
	within(t, m, "dropped", 70, 98)
	within(t, m, "late", 1, 30)
	exactly(t, m, "requests", 100-m["dropped"])
}

// A server stall: the open model shows it in every request that was due
// during it, the closed model only in the few requests that were in
// flight, since its workers stop sending while they wait.
func TestHTTPStallShowsInOpenModelOnly(t *testing.T) {
	run := func(h loads.HTTP) map[string]float64 {
		srv := loadtest.NewHTTP()
		defer srv.Close()
		h.URL = srv.URL + "/?latency=1ms"
		srv.Stall(time.Now().Add(700*time.Millisecond), 500*time.Millisecond, 500*time.Millisecond)
		return runHTTP(t, h).Metrics
	}
	closed := run(loads.HTTP{Concurrency: 2, Duration: 2 * time.Second})
	open := run(loads.HTTP{Rate: 400, Concurrency: 400, Duration: 2 * time.Second})
	t.Logf("closed: requests %v p50 %v p99 %v; open: requests %v p50 %v p99 %v dropped %v",
		closed["requests"], closed["latency_p50_ms"], closed["latency_p99_ms"],
		open["requests"], open["latency_p50_ms"], open["latency_p99_ms"], open["dropped"])
	exactly(t, open, "dropped", 0)
	within(t, open, "latency_p99_ms", 400, 1500)
	within(t, closed, "latency_max_ms", 400, 1500) // the stall happened to it too
	if open["latency_p99_ms"] < 10*closed["latency_p99_ms"] {
		t.Errorf("open p99 %v ms is not much larger than closed p99 %v ms", open["latency_p99_ms"], closed["latency_p99_ms"])
	}
}

func TestHTTPCancelReturnsFast(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := loads.HTTP{URL: srv.URL + "/?latency=20s", Concurrency: 4, Duration: time.Minute}.Run(ctx, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run error = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v after its context ended", d)
	}
}

func TestHTTPProgressAndDialer(t *testing.T) {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	var dials atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	var last loads.Progress
	var calls int
	_, err := loads.HTTP{URL: srv.URL + "/?latency=5ms", Concurrency: 3, Duration: 1200 * time.Millisecond}.
		Run(context.Background(), dial, func(p loads.Progress) { last = p; calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if got := dials.Load(); got != 3 {
		t.Errorf("dialed %d times, want 3 (one keep-alive connection per worker)", got)
	}
	if calls < 2 {
		t.Errorf("progress called %d times, want once a second and at the end", calls)
	}
	if last.Done < 100 || last.Rate <= 0 || last.Elapsed < time.Second {
		t.Errorf("last progress = %+v", last)
	}
}

func TestHTTPMethodHeadersBody(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 100)
		n, _ := r.Body.Read(body)
		got.Store(r.Method + " " + r.Header.Get("X-Test") + " " + string(body[:n]))
	}))
	defer srv.Close()
	res := runHTTP(t, loads.HTTP{URL: srv.URL, Method: "PUT", Headers: map[string]string{"X-Test": "yes"},
		Body: []byte(`{"a":1}`), Requests: 3})
	exactly(t, res.Metrics, "errors", 0)
	if s, _ := got.Load().(string); s != `PUT yes {"a":1}` {
		t.Errorf("server saw %q", s)
	}
}

// Responses framed every way HTTP/1.x allows, from a server that writes
// them by hand.
func TestHTTPResponseFraming(t *testing.T) {
	tests := []struct {
		name       string
		response   string
		closeAfter bool // the server closes after one response
		errors     float64
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 0},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n", false, 0},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true, 0},
		{"body to EOF", "HTTP/1.0 200 OK\r\n\r\nhello", true, 0},
		{"interim 100", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 0},
		{"stale keep-alive", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true, 0},
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", true, 10},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello", true, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := rawServer(t, tt.response, tt.closeAfter)
			res := runHTTP(t, loads.HTTP{URL: "http://" + addr + "/", Concurrency: 1, Requests: 10, Timeout: 5 * time.Second})
			exactly(t, res.Metrics, "requests", 10)
			exactly(t, res.Metrics, "errors", tt.errors)
			if tt.errors > 0 {
				exactly(t, res.Metrics, "errors_io", tt.errors)
			}
		})
	}
}

// rawServer answers every request on a connection with response; with
// closeAfter it closes the connection after one answer without saying so.
func rawServer(t *testing.T, response string, closeAfter bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					if _, err := c.Write([]byte(response)); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func TestHTTPInvalidConfig(t *testing.T) {
	tests := []struct {
		h    loads.HTTP
		want string
	}{
		{loads.HTTP{}, "url is empty"},
		{loads.HTTP{URL: "ftp://x/"}, "scheme must be http or https"},
		{loads.HTTP{URL: "http://x/", Rate: -1}, "rate -1"},
		{loads.HTTP{URL: "http://x/", Concurrency: -1}, "must not be negative"},
		{loads.HTTP{URL: "http://x/", Headers: map[string]string{"A": "b\r\nc: d"}}, "line break"},
	}
	for _, tt := range tests {
		_, err := tt.h.Run(context.Background(), nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v) error = %v, want it to say %q", tt.h, err, tt.want)
		}
	}
}

// https goes through TLS with the system's roots: a server whose
// certificate they do not vouch for fails to connect, and says why.
func TestHTTPSVerifiesCertificates(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	res := runHTTP(t, loads.HTTP{URL: srv.URL, Concurrency: 1, Requests: 2})
	exactly(t, res.Metrics, "errors_connect", 2)
	if len(res.Samples) == 0 || !strings.Contains(res.Samples[0], "certificate") {
		t.Errorf("samples = %q, want a certificate error", res.Samples)
	}
}
