package loadtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Raw is an HTTP/1.1 server that writes its answers by hand, byte for
// byte, to test a client against what real servers send, valid or not:
// the n-th request it reads (over all connections, from 0) gets
// Replies[n % len(Replies)]. It counts what it saw, so that a test can
// hold a client's figures against the server's.
type Raw struct {
	Addr string // 127.0.0.1:PORT

	l       net.Listener
	replies []Reply
	wg      sync.WaitGroup

	accepted, requests, answered, read, written atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Reply is what Raw does with one request.
type Reply struct {
	// Send is written as is once the request is read: one response, a
	// response and more, garbage, or nothing.
	Send string
	// Early writes Send as soon as the request's head is read, before
	// its body (as a server refusing a large upload does); the body is
	// read afterwards unless Close.
	Early bool
	// Close closes the connection after Send, without a word (a
	// Connection: close header is Send's business) and without reading
	// further.
	Close bool
	// IdleClose closes the connection when no next request has come
	// this long after Send, as a server's keep-alive timeout does.
	IdleClose time.Duration
}

// RawCounts is what a Raw server saw.
type RawCounts struct {
	Accepted int64 // connections
	Requests int64 // requests read (heads; bodies too unless Early and Close)
	Answered int64 // replies written whole
	Read     int64 // bytes read
	Written  int64 // bytes written
}

// NewRaw starts a server on addr (a free port if it ends in :0); Close
// stops it.
func NewRaw(addr string, replies ...Reply) (*Raw, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Raw{Addr: l.Addr().String(), l: l, replies: replies, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

// Counts says what the server has seen so far.
func (s *Raw) Counts() RawCounts {
	return RawCounts{
		Accepted: s.accepted.Load(), Requests: s.requests.Load(), Answered: s.answered.Load(),
		Read: s.read.Load(), Written: s.written.Load(),
	}
}

// Close stops the server and closes its connections.
func (s *Raw) Close() {
	s.l.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Raw) accept() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		})
	}
}

func (s *Raw) serve(c net.Conn) {
	br := bufio.NewReader(&counter{r: c, n: &s.read})
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		n := s.requests.Add(1) - 1
		r := s.replies[n%int64(len(s.replies))]
		if !r.Early {
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
		}
		if r.Send != "" {
			w, err := io.WriteString(c, r.Send)
			s.written.Add(int64(w))
			if err != nil {
				return
			}
			s.answered.Add(1)
		}
		if r.Close {
			return
		}
		if r.IdleClose > 0 {
			c.SetReadDeadline(time.Now().Add(r.IdleClose))
		}
		if r.Early {
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
		}
	}
}

type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
