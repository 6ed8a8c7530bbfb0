package loads

import (
	"net"
	"os"
	"sync"
	"time"
)

// timerConn gives deadlines to a connection that refuses them: an SSH
// target's tunnel (x/crypto/ssh's channel says "deadline not supported").
// Without it a request's timeout, and the abort when the run is
// cancelled, would do nothing there, and a stalled server would hold a
// worker for good. At the deadline the connection is closed, and what
// failed because of it fails as a timeout.
type timerConn struct {
	net.Conn
	mu      sync.Mutex
	timer   *time.Timer // made once: arming it per request allocates nothing
	expired bool
}

func newTimerConn(nc net.Conn) *timerConn {
	t := &timerConn{Conn: nc}
	t.timer = time.AfterFunc(time.Hour, t.expire)
	t.timer.Stop()
	return t
}

func (t *timerConn) expire() {
	t.mu.Lock()
	t.expired = true
	t.mu.Unlock()
	t.Conn.Close()
}

// SetDeadline arms the close; the zero time disarms it. Read and write
// deadlines are one.
func (t *timerConn) SetDeadline(d time.Time) error {
	t.timer.Stop()
	if !d.IsZero() {
		t.timer.Reset(time.Until(d))
	}
	return nil
}

func (t *timerConn) SetReadDeadline(d time.Time) error  { return t.SetDeadline(d) }
func (t *timerConn) SetWriteDeadline(d time.Time) error { return t.SetDeadline(d) }

func (t *timerConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	return n, t.cause(err)
}

func (t *timerConn) Write(p []byte) (int, error) {
	n, err := t.Conn.Write(p)
	return n, t.cause(err)
}

func (t *timerConn) Close() error {
	t.timer.Stop()
	return t.Conn.Close()
}

// cause turns an error that the deadline's close caused into the one a
// deadline gives.
func (t *timerConn) cause(err error) error {
	if err == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.expired {
		return os.ErrDeadlineExceeded
	}
	return err
}
