package loads

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The HTTP load speaks HTTP/1.1 itself instead of going through net/http:
// the request is serialized once and written as is, and a response is
// parsed in place from a reused buffer with no allocation. net/http costs
// several allocations, two goroutines per connection and channel hand-offs
// per request, which on a loopback benchmark makes the client the
// bottleneck (the brief asks for 0.9x wrk's rate).

// wire is a request serialized once, shared read-only by all connections.
type wire struct {
	addr   string // host:port to dial
	tls    *tls.Config
	head   bool // HEAD: a response has no body whatever it says
	packet []byte
}

func newWire(rawURL, method string, headers map[string]string, body []byte) (*wire, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse url %q: %w", rawURL, err)
	}
	w := &wire{head: method == "HEAD"}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		w.tls = &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}}
	default:
		return nil, fmt.Errorf("url %q: scheme must be http or https", rawURL)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("url %q has no host", rawURL)
	}
	w.addr = net.JoinHostPort(u.Hostname(), port)

	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, u.RequestURI())
	host := u.Host
	hasHeader := func(name string) bool {
		for k := range headers {
			if strings.EqualFold(k, name) {
				return true
			}
		}
		return false
	}
	if !hasHeader("Host") {
		fmt.Fprintf(&b, "Host: %s\r\n", host)
	}
	if !hasHeader("User-Agent") {
		b.WriteString("User-Agent: lockstep\r\n")
	}
	for k, v := range headers {
		if strings.ContainsAny(k+v, "\r\n") {
			return nil, fmt.Errorf("header %q: a name or value holds a line break", k)
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if len(body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	w.packet = b.Bytes()
	return w, nil
}

// errorKind sorts a failed request for the errors_* metrics.
type errorKind int

const (
	errNone errorKind = iota
	errConnect
	errTimeout
	errStatus4xx
	errStatus5xx
	errIO // reset, closed early, malformed response
)

// connectError marks a failure to establish a connection (dial or TLS).
type connectError struct{ err error }

func (e *connectError) Error() string { return "connect: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

func classify(status int, err error) errorKind {
	if err != nil {
		var ne net.Error
		var ce *connectError
		switch {
		case errors.As(err, &ce):
			return errConnect
		case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
			return errTimeout
		default:
			return errIO
		}
	}
	switch {
	case status >= 500:
		return errStatus5xx
	case status >= 400:
		return errStatus4xx
	}
	return errNone
}

// countingReader counts the bytes read from a connection (bytes_received
// counts what came over the wire, headers included, as wrk does).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// client1 is one HTTP/1.1 connection, reopened as needed; used by one
// goroutine at a time.
type client1 struct {
	w       *wire
	dial    Dialer
	timeout time.Duration
	nc      net.Conn
	cr      countingReader
	br      *bufio.Reader
	served  int // responses read on nc
	// stopAbort undoes the hook that aborts nc when the run is cancelled.
	stopAbort func() bool
	runCtx    context.Context
}

func newClient1(runCtx context.Context, w *wire, dial Dialer, timeout time.Duration) *client1 {
	c := &client1{w: w, dial: dial, timeout: timeout, runCtx: runCtx}
	c.br = bufio.NewReaderSize(&c.cr, 16<<10)
	return c
}

func (c *client1) close() {
	if c.nc != nil {
		c.stopAbort()
		c.nc.Close()
		c.nc = nil
	}
}

func (c *client1) connect() error {
	ctx, cancel := context.WithTimeout(c.runCtx, c.timeout)
	defer cancel()
	nc, err := c.dial(ctx, "tcp", c.w.addr)
	if err != nil {
		return &connectError{err}
	}
	if c.w.tls != nil {
		tc := tls.Client(nc, c.w.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return &connectError{err}
		}
		nc = tc
	}
	c.nc = nc
	c.served = 0
	c.cr = countingReader{r: nc, n: c.cr.n}
	c.br.Reset(&c.cr)
	// Cancelling the run must not wait for a request that may never end.
	c.stopAbort = context.AfterFunc(c.runCtx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// bytesRead is the running total of bytes read over all connections.
func (c *client1) bytesRead() int64 { return c.cr.n }

// do sends the request and reads the whole response; it returns the
// status. A keep-alive connection the server closed while idle is redialed
// once, silently, as browsers and net/http do.
func (c *client1) do() (int, error) {
	for attempt := 0; ; attempt++ {
		reused := c.nc != nil && c.served > 0
		if c.nc == nil {
			if err := c.connect(); err != nil {
				return 0, err
			}
		}
		status, got, err := c.roundTrip()
		if err == nil {
			return status, nil
		}
		c.close()
		if reused && !got && attempt == 0 && isStaleConn(err) {
			continue
		}
		return status, err
	}
}

func isStaleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

var errMalformed = errors.New("malformed HTTP response")

// roundTrip writes the request and reads one response. got says whether any
// byte of the response arrived (a request that got nothing back on a reused
// connection may be retried).
func (c *client1) roundTrip() (status int, got bool, err error) {
	if c.timeout > 0 {
		c.nc.SetDeadline(time.Now().Add(c.timeout))
	}
	if _, err := c.nc.Write(c.w.packet); err != nil {
		return 0, false, fmt.Errorf("write request: %w", err)
	}
	before := c.cr.n
	for {
		status, keep, err := c.readResponse()
		if err != nil {
			return status, c.cr.n > before, err
		}
		if status >= 100 && status < 200 && status != 101 {
			continue // interim response; the real one follows
		}
		c.served++
		if !keep {
			c.close()
		}
		return status, true, nil
	}
}

// line reads a line without its CRLF. A line longer than the buffer is
// consumed and returned truncated: only short headers matter here.
func (c *client1) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		head := l
		for err == bufio.ErrBufferFull {
			_, err = c.br.ReadSlice('\n')
		}
		if err != nil {
			return nil, err
		}
		return head, nil
	}
	if err != nil {
		if err == io.EOF && len(l) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimRight(l, "\r\n"), nil
}

func (c *client1) readResponse() (status int, keep bool, err error) {
	l, err := c.line()
	if err != nil {
		return 0, false, fmt.Errorf("read status line: %w", err)
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(l) < 12 || !bytes.HasPrefix(l, []byte("HTTP/1.")) || l[8] != ' ' {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, l)
	}
	status = int(l[9]-'0')*100 + int(l[10]-'0')*10 + int(l[11]-'0')
	if status < 100 || status > 999 {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, l)
	}
	keep = l[7] == '1' // HTTP/1.1 keeps the connection unless told otherwise
	length := int64(-1)
	chunked := false
	for {
		h, err := c.line()
		if err != nil {
			return status, false, fmt.Errorf("read headers: %w", err)
		}
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon < 0 {
			return status, false, fmt.Errorf("%w: header %q", errMalformed, h)
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			n, perr := strconv.ParseInt(string(value), 10, 64) // no alloc: the compiler elides this conversion
			if perr != nil || n < 0 {
				return status, false, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			length = n
		case equalFold(name, "transfer-encoding"):
			chunked = containsFold(value, "chunked")
		case equalFold(name, "connection"):
			switch {
			case containsFold(value, "close"):
				keep = false
			case containsFold(value, "keep-alive"):
				keep = true
			}
		}
	}
	if c.w.head || status == 204 || status == 304 || (status >= 100 && status < 200) {
		return status, keep, nil
	}
	switch {
	case chunked:
		return status, keep, c.readChunked()
	case length >= 0:
		if _, err := c.br.Discard(int(length)); err != nil {
			return status, false, fmt.Errorf("read body: %w", unexpected(err))
		}
		return status, keep, nil
	default: // the body runs to the end of the connection
		if _, err := io.Copy(io.Discard, c.br); err != nil {
			return status, false, fmt.Errorf("read body: %w", err)
		}
		return status, false, nil
	}
}

func (c *client1) readChunked() error {
	for {
		l, err := c.line()
		if err != nil {
			return fmt.Errorf("read chunk size: %w", unexpected(err))
		}
		if i := bytes.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		n, err := parseHex(bytes.TrimSpace(l))
		if err != nil {
			return err
		}
		if n == 0 {
			for { // trailers, up to the empty line
				t, err := c.line()
				if err != nil {
					return fmt.Errorf("read trailer: %w", unexpected(err))
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if _, err := c.br.Discard(int(n)); err != nil {
			return fmt.Errorf("read chunk: %w", unexpected(err))
		}
		if _, err := c.line(); err != nil {
			return fmt.Errorf("read chunk end: %w", unexpected(err))
		}
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseHex(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 15 {
		return 0, fmt.Errorf("%w: chunk size %q", errMalformed, b)
	}
	var n int64
	for _, ch := range b {
		switch {
		case '0' <= ch && ch <= '9':
			n = n<<4 | int64(ch-'0')
		case 'a' <= ch && ch <= 'f':
			n = n<<4 | int64(ch-'a'+10)
		case 'A' <= ch && ch <= 'F':
			n = n<<4 | int64(ch-'A'+10)
		default:
			return 0, fmt.Errorf("%w: chunk size %q", errMalformed, b)
		}
	}
	return n, nil
}

// equalFold compares an ASCII header name with a lower-case one.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}

func containsFold(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		if equalFold(b[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}
