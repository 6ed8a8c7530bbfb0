package loads

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A connection through quickSyscalls is a net.Conn as any other: a Read
// and a Write at once (net/http's two loops), the end of the stream as
// io.EOF, a deadline as a timeout, a reset as ECONNRESET.
func TestQuickSyscallsConnIsANetConn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() (net.Conn, net.Conn) {
		t.Helper()
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		qc := quickSyscalls(nc)
		if _, ok := qc.(*rawConn); !ok {
			t.Fatalf("quickSyscalls gave %T for a TCP connection", qc)
		}
		return qc, <-accepted
	}

	t.Run("read and write at once", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		go func() { io.Copy(srv, srv); srv.Close() }()           // echo
		want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: the writer waits for room
		var got bytes.Buffer
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := io.CopyN(&got, c, int64(len(want))); err != nil {
				t.Errorf("read: %v", err)
			}
		})
		if n, err := c.Write(want); err != nil || n != len(want) {
			t.Errorf("write = %d, %v", n, err)
		}
		wg.Wait()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("read back %d bytes, not what was written", got.Len())
		}
	})
	t.Run("end of stream", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		srv.Write([]byte("bye"))
		srv.Close()
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "bye" {
			t.Errorf("ReadAll = %q, %v", got, err)
		}
		if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("Read after the end = %d, %v; want 0, io.EOF", n, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		defer srv.Close()
		c.SetDeadline(time.Now().Add(-time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read past the deadline: %v, want a timeout", err)
		}
		if classify(0, err) != errTimeout {
			t.Errorf("classified as %v, want errTimeout", classify(0, err))
		}
	})
	// sendThenRead: the queued request goes out with the first Read,
	// which then gets the answer; one too big for the socket's room is
	// written whole all the same; one that cannot go out says how much
	// did.
	t.Run("send then read", func(t *testing.T) {
		for _, size := range []int{1, 100, 4 << 20} {
			c, srv := dial()
			go func() { io.Copy(srv, srv); srv.Close() }() // echo
			want := bytes.Repeat([]byte("x"), size)
			c.(*rawConn).sendThenRead(want)
			got := make([]byte, 0, size)
			buf := make([]byte, 64<<10)
			for len(got) < size {
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("size %d: Read after %d bytes: %v", size, len(got), err)
				}
				got = append(got, buf[:n]...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("size %d: read back %d bytes, not what was sent", size, len(got))
			}
			c.Close()
		}
	})
	t.Run("send more than the socket has room for", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		// Small buffers: the request cannot go out in one write, and the
		// rest waits for room the server makes as it reads.
		c.(*rawConn).Conn.(*net.TCPConn).SetWriteBuffer(4 << 10)
		srv.(*net.TCPConn).SetReadBuffer(4 << 10)
		const size = 256 << 10
		go func() {
			if _, err := io.CopyN(io.Discard, srv, size); err == nil {
				srv.Write([]byte("ok"))
			}
			srv.Close()
		}()
		c.(*rawConn).sendThenRead(bytes.Repeat([]byte("x"), size))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "ok" {
			t.Errorf("the answer to a request bigger than the socket's room: %q, %v", got, err)
		}
	})
	t.Run("send on a reset connection", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		srv.(*net.TCPConn).SetLinger(0)
		srv.Close() // RST
		// The reset has come once a read sees it; the send after it fails
		// with nothing written.
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Read after a reset: %v", err)
		}
		c.(*rawConn).sendThenRead([]byte("GET / HTTP/1.1\r\n\r\n"))
		_, err := c.Read(make([]byte, 1))
		var se *sendError
		if !errors.As(err, &se) || se.Sent != 0 || !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Read sending on a reset connection: %v, want a *sendError of nothing sent, EPIPE", err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		c, srv := dial()
		defer c.Close()
		srv.(*net.TCPConn).SetLinger(0)
		srv.Close() // RST
		_, err := c.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNRESET) || classify(0, err) != errIO {
			t.Errorf("Read after a reset: %v (%v), want ECONNRESET, errIO", err, classify(0, err))
		}
	})
}
