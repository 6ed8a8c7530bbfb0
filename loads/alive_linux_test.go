package loads

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"lockstep/loads/loadtest"
)

// A kept-alive connection the server closed while it sat idle: the next
// request is not written on it but on a new connection, and that is
// counted as a reconnect, not as a request or an error.
func TestClientMovesUnsentRequestOffClosedConnection(t *testing.T) {
	srv, err := loadtest.NewRaw("127.0.0.1:0", loadtest.Reply{Send: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", Close: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	w, err := newWire("http://"+srv.Addr+"/", "GET", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient1(context.Background(), w, Dialer(nil).orDefault(), HTTPDefaults().Timeout)
	defer c.close()
	if status, err := c.do(); err != nil || status != 200 {
		t.Fatalf("first request: %d, %v", status, err)
	}
	waitPeerClosed(t, c.nc)
	c.idleFrom = c.idleFrom.Add(-time.Second) // as if it had been idle for a second
	if status, err := c.do(); err != nil || status != 200 {
		t.Fatalf("second request: %d, %v", status, err)
	}
	if got := c.counts(); got.conns != 2 || got.reconnects != 1 {
		t.Errorf("client counted %d connections and %d reconnects, want 2 and 1", got.conns, got.reconnects)
	}
	srv.Close()
	if got := srv.Counts(); got.Accepted != 2 || got.Requests != 2 {
		t.Errorf("server saw %d connections and %d requests, want 2 and 2", got.Accepted, got.Requests)
	}
}

// waitPeerClosed waits, in the poller, until the server's end of nc has
// closed and this end has seen it.
func waitPeerClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN // false: wait until readable
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkIdleCheck is what checking a kept-alive connection before each
// request adds to it: one non-blocking recv.
func BenchmarkIdleCheck(b *testing.B) {
	srv, err := loadtest.NewRaw("127.0.0.1:0", loadtest.Reply{Send: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	w, err := newWire("http://"+srv.Addr+"/", "GET", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := newClient1(context.Background(), w, Dialer(nil).orDefault(), HTTPDefaults().Timeout)
	defer c.close()
	if _, err := c.do(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !c.alive() {
			b.Fatal("connection seen closed")
		}
	}
}
