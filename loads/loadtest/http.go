package loadtest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP is a test server whose answer each request chooses by its query:
//
//	latency=DURATION  wait this long before answering (e.g. 5ms)
//	status=CODE       answer with this status (default 200)
//	every=N           apply status to every Nth such request only (the
//	                  server counts them), 200 to the others
//	size=N            a body of N bytes (default 2)
//
// and by its path: /reset resets the connection (TCP RST) without an
// answer. Stall makes every request arriving in a window wait.
type HTTP struct {
	URL string // http://127.0.0.1:PORT
	// Dial is the way to the server: nil for one on a port, Pipe.Dial for
	// one from NewHTTPPiped.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	close    func()
	requests atomic.Int64
	every    atomic.Int64

	mu    sync.Mutex
	stall struct {
		from, to time.Time
		delay    time.Duration
	}
	freeze struct {
		start          time.Time
		period, length time.Duration
	}
}

// NewHTTP starts a server on 127.0.0.1; Close stops it.
func NewHTTP() *HTTP {
	s := &HTTP{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL, s.close = srv.URL, srv.Close
	return s
}

// NewHTTPPiped starts a server on in-memory connections (see Pipe), for
// tests whose timings run on testing/synctest's clock: a load reaches it
// through Dial, whatever host URL names. /reset closes a pipe plainly:
// a reset is TCP's. Close stops it.
func NewHTTPPiped() *HTTP {
	s := &HTTP{}
	p := NewPipe(http.HandlerFunc(s.serve))
	s.URL, s.Dial, s.close = "http://http.pipe", p.Dial, p.Close
	return s
}

// Close stops the server and closes its connections.
func (s *HTTP) Close() { s.close() }

// Requests is the number of requests the server has received.
func (s *HTTP) Requests() int64 { return s.requests.Load() }

// Stall makes every request that arrives in [from, from+length) wait delay
// before it is answered, as a server does during a garbage-collection pause
// or a lock convoy.
func (s *HTTP) Stall(from time.Time, length, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall.from, s.stall.to, s.stall.delay = from, from.Add(length), delay
}

// Freeze stops the server answering for the last length of every period
// from now, as a process does that a collector stops the world of: a
// request arriving in a frozen stretch is answered when it ends.
func (s *HTTP) Freeze(period, length time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze.start, s.freeze.period, s.freeze.length = time.Now(), period, length
}

func (s *HTTP) stallFor(t time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.freeze; f.period > 0 {
		if into := t.Sub(f.start) % f.period; into >= f.period-f.length {
			return f.period - into
		}
	}
	if !t.Before(s.stall.from) && t.Before(s.stall.to) {
		return s.stall.delay
	}
	return 0
}

func (s *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if !sleep(r.Context(), s.stallFor(time.Now())) {
		return
	}
	if r.URL.Path == "/reset" {
		reset(w)
		return
	}
	q := r.URL.Query()
	if d, err := time.ParseDuration(q.Get("latency")); err == nil && !sleep(r.Context(), d) {
		return
	}
	status := http.StatusOK
	if c, err := strconv.Atoi(q.Get("status")); err == nil {
		status = c
		if n, err := strconv.ParseInt(q.Get("every"), 10, 64); err == nil && n > 0 && s.every.Add(1)%n != 0 {
			status = http.StatusOK
		}
	}
	size := 2
	if n, err := strconv.Atoi(q.Get("size")); err == nil && n >= 0 {
		size = n
	}
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(status)
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	w.Write(body)
}

// reset closes the connection with SO_LINGER 0, which sends RST: the
// client sees "connection reset by peer", not a clean end.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("loadtest: connection cannot be hijacked")
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// sleep waits d; false means the client went away first. Waiting on the
// request's context lets Close return without sitting out long latencies.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
