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
	"testing/synctest"
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

// runHTTPPiped runs h against a fresh loadtest.NewHTTPPiped serving query,
// on testing/synctest's clock: latencies and rates are the server's own,
// whatever the machine is doing. It returns the result and the server.
func runHTTPPiped(t *testing.T, query string, h loads.HTTP, before ...func(*loadtest.HTTP)) (loads.Result, *loadtest.HTTP) {
	t.Helper()
	srv := loadtest.NewHTTPPiped()
	defer srv.Close()
	for _, b := range before {
		b(srv)
	}
	h.URL = srv.URL + query
	res, err := h.Run(t.Context(), srv.Dial, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, srv
}

// nearMS checks a latency the histogram holds to 3 significant digits:
// want up to 0.1% more.
func nearMS(t *testing.T, m map[string]float64, name string, want float64) {
	t.Helper()
	within(t, m, name, want, want*1.001)
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
	synctest.Test(t, func(t *testing.T) {
		// 2 workers, 20 ms per answer: 30 each, back to back, 100 requests/s.
		res, srv := runHTTPPiped(t, "/?latency=20ms&size=100", loads.HTTP{Concurrency: 2, Requests: 60})
		m := res.Metrics
		exactly(t, m, "requests", 60)
		exactly(t, m, "errors", 0)
		if got := srv.Requests(); got != 60 {
			t.Errorf("server received %d requests, want 60", got)
		}
		for _, k := range []string{"latency_p50_ms", "latency_mean_ms", "latency_p99_ms", "latency_max_ms"} {
			nearMS(t, m, k, 20)
		}
		exactly(t, m, "requests_per_s", 100)
		exactly(t, m, "duration_s", 0.6)
		// Each response is a status line, a few headers and 100 bytes of body.
		within(t, m, "bytes_received", 60*(100+40), 60*(100+300))
		if res.Notes["model"] != "closed" {
			t.Errorf("model note = %q, want closed", res.Notes["model"])
		}
	})
}

func TestHTTPDurationAndWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, srv := runHTTPPiped(t, "/?latency=10ms", loads.HTTP{Concurrency: 1,
			Warmup: 300 * time.Millisecond, Duration: 400 * time.Millisecond})
		m := res.Metrics
		exactly(t, m, "duration_s", 0.4)
		// 10 ms each: 30 warm-up requests reached the server, not counted,
		// then 40 measured.
		exactly(t, m, "requests", 40)
		if got := srv.Requests(); got != 70 {
			t.Errorf("server received %d requests, want 30 warm-up and 40 measured", got)
		}
		exactly(t, m, "requests_per_s", 100)
	})
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
	synctest.Test(t, func(t *testing.T) {
		// One arrival every 5 ms for 1 s: exactly 200, at t = 0, 5, ...,
		// 995 ms, each answered at once: the last ends 995 ms in.
		res, _ := runHTTPPiped(t, "", loads.HTTP{Rate: 200, Duration: time.Second, Concurrency: 50})
		m := res.Metrics
		exactly(t, m, "requests", 200)
		exactly(t, m, "dropped", 0)
		exactly(t, m, "errors", 0)
		exactly(t, m, "late", 0)
		exactly(t, m, "duration_s", 0.995)
		within(t, m, "requests_per_s", 200/0.995-1e-9, 200/0.995+1e-9)
		if res.Notes["model"] != "open" {
			t.Errorf("model note = %q, want open", res.Notes["model"])
		}
	})
}

func TestHTTPOpenModelWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Arrivals every 5 ms: 60 in the 300 ms warm-up, not counted, then
		// exactly 100 in the measured 500 ms, the last 495 ms in.
		res, srv := runHTTPPiped(t, "", loads.HTTP{Rate: 200, Warmup: 300 * time.Millisecond, Duration: 500 * time.Millisecond, Concurrency: 50})
		m := res.Metrics
		exactly(t, m, "requests", 100)
		exactly(t, m, "dropped", 0)
		exactly(t, m, "duration_s", 0.495)
		if got := srv.Requests(); got != 160 {
			t.Errorf("server received %d requests, want 60 warm-up and 100 measured", got)
		}
	})
}

func TestHTTPOpenModelCountsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1 connection, 1 queue slot, answers take 50 ms, arrivals every
		// 5 ms for 495 ms: each answer frees the slot for one of the ten
		// arrivals during it, the others are dropped; every request but
		// the first waited for the one before. An arrival at the instant
		// an answer ends may find the slot still taken, whichever
		// goroutine runs first, hence a range.
		res, _ := runHTTPPiped(t, "/?latency=50ms", loads.HTTP{Rate: 200, Requests: 100, Concurrency: 1})
		m := res.Metrics
		within(t, m, "dropped", 88, 90)
		exactly(t, m, "requests", 100-m["dropped"])
		exactly(t, m, "late", m["requests"]-1)
	})
}

// A server stall: the open model shows it in every request that was due
// during it, the closed model only in the few requests that were in
// flight, since its workers stop sending while they wait.
func TestHTTPStallShowsInOpenModelOnly(t *testing.T) {
	run := func(h loads.HTTP) (m map[string]float64) {
		synctest.Test(t, func(t *testing.T) {
			res, _ := runHTTPPiped(t, "/?latency=1ms", h, func(srv *loadtest.HTTP) {
				srv.Stall(time.Now().Add(700*time.Millisecond), 500*time.Millisecond, 500*time.Millisecond)
			})
			m = res.Metrics
		})
		return m
	}
	closed := run(loads.HTTP{Concurrency: 2, Duration: 2 * time.Second})
	open := run(loads.HTTP{Rate: 400, Concurrency: 400, Duration: 2 * time.Second})
	t.Logf("closed: requests %v p50 %v p99 %v; open: requests %v p50 %v p99 %v dropped %v",
		closed["requests"], closed["latency_p50_ms"], closed["latency_p99_ms"],
		open["requests"], open["latency_p50_ms"], open["latency_p99_ms"], open["dropped"])
	// A stalled request waits 500 ms and then its 1 ms. The open model's
	// 200 arrivals in the stall are 25% of its 800: its p90 and p99 are
	// the stall. The closed model's 2 workers each lose one request to it
	// (2 of about 3000): its p99 is the 1 ms answer, its max the stall.
	exactly(t, open, "dropped", 0)
	nearMS(t, open, "latency_p99_ms", 501)
	nearMS(t, open, "latency_p90_ms", 501)
	nearMS(t, closed, "latency_max_ms", 501)
	nearMS(t, closed, "latency_p99_ms", 1)
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
