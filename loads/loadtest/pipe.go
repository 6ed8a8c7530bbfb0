package loadtest

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Pipe serves h on in-memory connections (net.Pipe) rather than on a
// port. In a testing/synctest bubble nothing then waits on the network,
// so the bubble's clock moves client and server alike: a server that
// sends a token 100 ms after the last one is measured at exactly 100 ms,
// whatever else the machine is doing.
type Pipe struct {
	srv   *http.Server
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipe starts serving h; Close stops it.
func NewPipe(h http.Handler) *Pipe {
	p := &Pipe{srv: &http.Server{Handler: h}, conns: make(chan net.Conn), done: make(chan struct{})}
	go p.srv.Serve(pipeListener{p})
	return p
}

// Dial connects to the server, whatever network and address it is given:
// it is a loads.Dialer.
func (p *Pipe) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the server and closes its connections.
func (p *Pipe) Close() {
	p.srv.Close()
	p.once.Do(func() { close(p.done) })
}

// pipeListener hands the server the connections Dial makes.
type pipeListener struct{ p *Pipe }

func (l pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.p.conns:
		return c, nil
	case <-l.p.done:
		return nil, net.ErrClosed
	}
}

func (l pipeListener) Close() error {
	l.p.once.Do(func() { close(l.p.done) })
	return nil
}

func (l pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
