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
	"os"
	"strings"
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
	errIO       // reset, or closed before the response ended
	errProtocol // a response HTTP/1.1 does not allow
)

// connectError marks a failure to establish a connection (dial or TLS).
type connectError struct{ err error }

func (e *connectError) Error() string { return "connect: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// errProtocol marks a response that breaks HTTP/1.1 (RFC 9112): the
// status, if any, is not counted, and the connection is not reused.
var errProtocolViolation = errors.New("HTTP protocol violation")

func protocolError(what string, b []byte) error {
	if len(b) > 80 {
		b = b[:80]
	}
	return fmt.Errorf("%w: %s %q", errProtocolViolation, what, b)
}

func classify(status int, err error) errorKind {
	if err != nil {
		var ne net.Error
		var ce *connectError
		switch {
		case errors.As(err, &ce):
			return errConnect
		case errors.Is(err, errProtocolViolation):
			return errProtocol
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

// maxHead bounds a response's header block (status line and header
// lines), its trailers, and a chunk-size line: a server that sends more is
// answered with a protocol error rather than with unbounded memory.
const maxHead = 1 << 20

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

// counts are a client's running totals; a load records the difference
// over each measured request.
type counts struct {
	bytes      int64 // read, headers included
	conns      int64 // connections opened
	reconnects int64 // requests moved to a new connection before any byte was written
}

func (a counts) minus(b counts) counts {
	return counts{a.bytes - b.bytes, a.conns - b.conns, a.reconnects - b.reconnects}
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
	// idleFrom is when nc last fell idle: opened, or a response read.
	idleFrom time.Time
	// deadline is nc's deadline as last set (see arm).
	deadline time.Time
	conns    int64
	retried  int64
	// left is what the header block being read may still take (maxHead).
	left int
	// long holds a line longer than br's buffer (rare: grown once, reused).
	long []byte
	// alive tells whether the server has closed nc while it was idle
	// (nil where that cannot be seen without reading: see alive_linux.go).
	alive func() bool
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
		c.alive = nil
	}
}

func (c *client1) connect() error {
	ctx, cancel := context.WithTimeout(c.runCtx, c.timeout)
	defer cancel()
	nc, err := c.dial(ctx, "tcp", c.w.addr)
	if err != nil {
		return c.connectFailed(ctx, err)
	}
	if nc.SetDeadline(time.Time{}) != nil {
		nc = newTimerConn(nc)
	}
	raw := nc
	nc = quickSyscalls(nc)
	if c.w.tls != nil {
		tc := tls.Client(nc, c.w.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return c.connectFailed(ctx, err)
		}
		nc = tc
	}
	c.nc = nc
	c.conns++
	c.served = 0
	c.idleFrom, c.deadline = time.Now(), time.Time{}
	c.cr = countingReader{r: nc, n: c.cr.n}
	c.br.Reset(&c.cr)
	c.alive = c.watchIdle(raw)
	// Cancelling the run must not wait for a request that may never end.
	c.stopAbort = context.AfterFunc(c.runCtx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// connectFailed tells a connect that failed from one the request's own
// timeout cut short: that request timed out (errors_timeout), whatever
// error the dialer wrapped the deadline in.
func (c *client1) connectFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && c.runCtx.Err() == nil {
		return fmt.Errorf("connect: %w: %w", context.DeadlineExceeded, err)
	}
	return &connectError{err}
}

func (c *client1) counts() counts {
	return counts{bytes: c.cr.n, conns: c.conns, reconnects: c.retried}
}

// idleCheckAfter is how long a kept-alive connection must have been idle
// before a request to be checked for a close by the server (watchIdle).
// Idle is since its last response ended: a closed-model worker sends its
// next request microseconds after, and skips the check and its system
// call (counted from the last send instead, most requests at 64
// connections were checked).
const idleCheckAfter = time.Millisecond

// deadlineSlack bounds how much later than its timeout a request is cut
// off (at most timeout/16): see arm.
const deadlineSlack = 100 * time.Millisecond

// errNothingWritten: the connection failed before any byte of the request
// went out, so the server cannot have seen it.
var errNothingWritten = errors.New("connection closed before the request was written")

// do sends the request and reads the whole response; it returns the
// status. A request is sent once: one whose connection closes after any
// byte of it was written is an error, never sent again (the server may
// have acted on it). Only a request none of whose bytes went out, on a
// kept-alive connection the server closed while idle, moves to a new
// connection, and that is counted as a reconnect.
func (c *client1) do() (int, error) {
	now := time.Now()
	// A server closes a connection it finds idle after a second or more;
	// back-to-back requests skip the check, which costs a system call.
	if c.nc != nil && c.alive != nil && now.Sub(c.idleFrom) > idleCheckAfter && !c.alive() {
		c.close()
		c.retried++
	}
	for attempt := 0; ; attempt++ {
		if c.nc == nil {
			if err := c.connect(); err != nil {
				return 0, err
			}
		}
		reused := c.served > 0
		status, err := c.roundTrip(now)
		if err == nil {
			return status, nil
		}
		c.close()
		if reused && attempt == 0 && errors.Is(err, errNothingWritten) {
			c.retried++
			continue
		}
		return status, err
	}
}

// arm makes sure nc's deadline, for a request sent at now, is at least
// the timeout away. Setting it for every request moves a runtime timer
// each time; set up to deadlineSlack further, it holds for the requests
// of the next deadlineSlack. A request is then cut off up to that much
// late, but one that took longer than the timeout still fails as a
// timeout (roundTrip).
func (c *client1) arm(now time.Time) {
	want := now.Add(c.timeout)
	if c.timeout <= 0 || !c.deadline.Before(want) {
		return
	}
	c.deadline = want.Add(min(c.timeout/16, deadlineSlack))
	c.nc.SetDeadline(c.deadline)
}

// roundTrip writes the request and reads one final response.
func (c *client1) roundTrip(now time.Time) (int, error) {
	c.arm(now)
	if rc, ok := c.nc.(*rawConn); ok {
		// Written by the response's first read, which then waits for it
		// without a read that would find nothing yet.
		rc.sendThenRead(c.w.packet)
	} else if n, err := c.nc.Write(c.w.packet); err != nil {
		return c.writeFailed(n, err)
	}
	status, keep, err := c.readFinal()
	if err != nil {
		if se := (*sendError)(nil); errors.As(err, &se) {
			return c.writeFailed(se.Sent, se.Err)
		}
		return status, err
	}
	c.idleFrom = time.Now()
	if c.timeout > 0 && c.idleFrom.Sub(now) > c.timeout {
		// Within arm's slack: what a deadline at the timeout would have
		// cut off.
		return status, fmt.Errorf("read response: %w", os.ErrDeadlineExceeded)
	}
	c.served++
	if !keep {
		c.close()
	}
	return status, nil
}

// writeFailed is a request's end when only n bytes of it were written
// (err saying why).
func (c *client1) writeFailed(n int, err error) (int, error) {
	if n == 0 {
		return 0, fmt.Errorf("write request: %w: %w", errNothingWritten, err)
	}
	// A server may answer before it has read the whole request and stop
	// reading (a 413 to a large body): its answer counts, and the
	// connection, with half a request on it, is not reused.
	if status, _, rerr := c.readFinal(); rerr == nil {
		c.close()
		return status, nil
	}
	return 0, fmt.Errorf("write request: %w", err)
}

// readFinal reads responses up to the final one: 1xx interim responses
// (100 Continue, 103 Early Hints) come before it and are not counted.
func (c *client1) readFinal() (status int, keep bool, err error) {
	for {
		status, keep, err := c.readResponse()
		if err != nil || status >= 200 {
			return status, keep, err
		}
		if status == 101 { // an upgrade nobody asked for: the connection speaks something else now
			return status, false, protocolError("status", []byte("101 Switching Protocols, unasked"))
		}
	}
}

// line reads a line without its line end (CRLF, or a bare LF as RFC 9112
// §2.2 allows), taking its length from c.left. A line longer than br's
// buffer is gathered in c.long.
func (c *client1) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err == nil {
		if c.left -= len(l); c.left < 0 {
			return nil, fmt.Errorf("%w: header block over %d bytes", errProtocolViolation, maxHead)
		}
		return trimEOL(l), nil
	}
	c.long = c.long[:0]
	for err == bufio.ErrBufferFull {
		if c.left -= len(l); c.left < 0 {
			return nil, fmt.Errorf("%w: header block over %d bytes", errProtocolViolation, maxHead)
		}
		c.long = append(c.long, l...)
		l, err = c.br.ReadSlice('\n')
	}
	if err != nil {
		if err == io.EOF && len(c.long)+len(l) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if c.left -= len(l); c.left < 0 {
		return nil, fmt.Errorf("%w: header block over %d bytes", errProtocolViolation, maxHead)
	}
	c.long = append(c.long, l...)
	return trimEOL(c.long), nil
}

func trimEOL(l []byte) []byte {
	l = l[:len(l)-1]
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	return l
}

// readResponse reads one response, interim or final, and its body, by the
// rules of RFC 9112 §6.3.
func (c *client1) readResponse() (status int, keep bool, err error) {
	c.left = maxHead
	if cap(c.long) > 64<<10 {
		c.long = nil // a long header was rare: do not hold its memory for the run
	}
	l, err := c.line()
	if err != nil {
		return 0, false, fmt.Errorf("read status line: %w", err)
	}
	// status-line = HTTP-version SP 3DIGIT SP [reason-phrase]; the reason
	// may hold anything, and a server that drops the SP before an empty
	// one ("HTTP/1.1 200") is still understood, as every client does.
	if len(l) < 12 || !bytes.HasPrefix(l, []byte("HTTP/1.")) || !isDigit(l[7]) || l[8] != ' ' ||
		!isDigit(l[9]) || !isDigit(l[10]) || !isDigit(l[11]) || (len(l) > 12 && l[12] != ' ') {
		return 0, false, protocolError("status line", l)
	}
	status = int(l[9]-'0')*100 + int(l[10]-'0')*10 + int(l[11]-'0')
	if status < 100 || status > 599 { // RFC 9110 §15: outside 100..599 is invalid
		return 0, false, protocolError("status line", l)
	}
	http10 := l[7] == '0'
	length := int64(-1)
	var te, chunked, closeConn, keepAlive bool
	for {
		h, err := c.line()
		if err != nil {
			return status, false, fmt.Errorf("read headers: %w", err)
		}
		if len(h) == 0 {
			break
		}
		name, value, err := fieldLine(h)
		if err != nil {
			return status, false, err
		}
		switch {
		case equalFold(name, "content-length"):
			if length, err = contentLength(value, length); err != nil {
				return status, false, err
			}
		case equalFold(name, "transfer-encoding"):
			// The codings of every Transfer-Encoding line make one list;
			// chunked frames the body only as the last of them.
			for tok, rest := nextToken(value); len(tok) > 0; tok, rest = nextToken(rest) {
				te = true
				chunked = equalFold(tok, "chunked")
			}
		case equalFold(name, "connection"):
			for tok, rest := nextToken(value); len(tok) > 0; tok, rest = nextToken(rest) {
				switch {
				case equalFold(tok, "close"):
					closeConn = true
				case equalFold(tok, "keep-alive"):
					keepAlive = true
				}
			}
		}
	}
	// HTTP/1.1 keeps the connection unless told otherwise; 1.0 only when told.
	keep = !closeConn && (!http10 || keepAlive)
	if c.w.head || status == 204 || status == 304 || status < 200 {
		return status, keep, nil // no body, whatever the headers say (RFC 9112 §6.3, first rule)
	}
	switch {
	case te && length >= 0:
		// RFC 9112 §6.3: Transfer-Encoding would override Content-Length,
		// but the pair "ought to be handled as an error" (response
		// splitting, smuggling): the framing cannot be trusted.
		return status, false, protocolError("framing", []byte("Transfer-Encoding with Content-Length"))
	case te && http10:
		// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
		return status, false, protocolError("framing", []byte("Transfer-Encoding in HTTP/1.0"))
	}
	switch {
	case chunked:
		return status, keep, c.readChunked()
	case length >= 0:
		if _, err := c.br.Discard(int(length)); err != nil {
			return status, false, fmt.Errorf("read body: %w", unexpected(err))
		}
		return status, keep, nil
	default: // no length, or a coding other than chunked last: the body runs to the end of the connection
		if _, err := io.Copy(io.Discard, c.br); err != nil {
			return status, false, fmt.Errorf("read body: %w", err)
		}
		return status, false, nil
	}
}

// fieldLine splits a header (or trailer) line into its name and its value
// without surrounding whitespace, rejecting what RFC 9112 §5 forbids.
func fieldLine(h []byte) (name, value []byte, err error) {
	if h[0] == ' ' || h[0] == '\t' {
		// obs-fold (RFC 9112 §5.2): obsolete; a server sending it today
		// is broken, and unfolding would hide that.
		return nil, nil, protocolError("folded header line", h)
	}
	colon := bytes.IndexByte(h, ':')
	if colon <= 0 || !isToken(h[:colon]) { // no name, or whitespace before the colon
		return nil, nil, protocolError("header line", h)
	}
	value = h[colon+1:]
	if bytes.IndexByte(value, '\r') >= 0 || bytes.IndexByte(value, 0) >= 0 {
		return nil, nil, protocolError("header value with CR or NUL", h) // RFC 9110 §5.5
	}
	return h[:colon], trimOWS(value), nil
}

// contentLength parses a Content-Length value (a list of equal values is
// one value, RFC 9110 §8.6) given the one seen before (-1: none); values
// that differ are a protocol error.
func contentLength(value []byte, prev int64) (int64, error) {
	n := prev
	empty := true
	for tok, rest := nextToken(value); len(tok) > 0; tok, rest = nextToken(rest) {
		empty = false
		v, ok := parseDecimal(tok)
		if !ok {
			return 0, protocolError("Content-Length", value)
		}
		if n >= 0 && v != n {
			return 0, protocolError("conflicting Content-Length", value)
		}
		n = v
	}
	if empty {
		return 0, protocolError("Content-Length", value)
	}
	return n, nil
}

// nextToken splits the first non-empty element, without surrounding
// whitespace, off a comma-separated list; an empty tok means none is left.
func nextToken(v []byte) (tok, rest []byte) {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		if i < 0 {
			return trimOWS(v), nil
		}
		tok, v = trimOWS(v[:i]), v[i+1:]
		if len(tok) > 0 {
			return tok, v
		}
	}
	return nil, nil
}

func (c *client1) readChunked() error {
	for {
		c.left = maxHead
		l, err := c.line()
		if err != nil {
			return fmt.Errorf("read chunk size: %w", unexpected(err))
		}
		size := l
		if i := bytes.IndexByte(size, ';'); i >= 0 { // chunk extensions: ignored
			size = size[:i]
		}
		n, err := parseHex(trimOWS(size))
		if err != nil {
			return err
		}
		if n == 0 {
			c.left = maxHead
			for { // trailers, up to the empty line
				t, err := c.line()
				if err != nil {
					return fmt.Errorf("read trailer: %w", unexpected(err))
				}
				if len(t) == 0 {
					return nil
				}
				if _, _, err := fieldLine(t); err != nil {
					return err
				}
			}
		}
		if _, err := c.br.Discard(int(n)); err != nil {
			return fmt.Errorf("read chunk: %w", unexpected(err))
		}
		c.left = maxHead
		end, err := c.line()
		if err != nil {
			return fmt.Errorf("read chunk end: %w", unexpected(err))
		}
		if len(end) != 0 {
			return protocolError("chunk longer than its size", end)
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
	digits := bytes.TrimLeft(b, "0")
	if len(b) == 0 || len(digits) > 15 {
		return 0, protocolError("chunk size", b)
	}
	var n int64
	for _, ch := range digits {
		switch {
		case '0' <= ch && ch <= '9':
			n = n<<4 | int64(ch-'0')
		case 'a' <= ch && ch <= 'f':
			n = n<<4 | int64(ch-'a'+10)
		case 'A' <= ch && ch <= 'F':
			n = n<<4 | int64(ch-'A'+10)
		default:
			return 0, protocolError("chunk size", b)
		}
	}
	return n, nil
}

// parseDecimal parses 1*DIGIT (no sign, unlike strconv) up to 18 digits.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range b {
		if !isDigit(ch) {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, true
}

func isDigit(ch byte) bool { return '0' <= ch && ch <= '9' }

// isToken reports whether b is a field name: 1*tchar (RFC 9110 §5.6.2).
func isToken(b []byte) bool {
	for _, ch := range b {
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0:
		default:
			return false
		}
	}
	return len(b) > 0
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
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
