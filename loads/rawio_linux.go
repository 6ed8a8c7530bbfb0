package loads

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawConn reads and writes a socket through its RawConn with system calls
// the Go scheduler is not told of (syscall.RawSyscall), waiting in the
// runtime's poller as net.Conn does (deadlines included) when the socket
// has nothing to give or no room. A read or write of a non-blocking
// socket never blocks, but through syscall.Syscall every one marks its
// thread as in a system call, and under load sysmon hands the thread's P
// to another thread when one took over 20 µs: a wake-up, then a sleep
// when the call returns, both context switches, for a call that was
// about to end.
type rawConn struct {
	net.Conn
	rc syscall.RawConn
	// Each direction's system call, its arguments and results, made once
	// per connection so that a request allocates nothing; a Read and a
	// Write may run at once (net/http's two loops), two of a kind one
	// after the other.
	r, w rawCall
}

// rawCall is one direction's call: f reads or writes p, and says n and
// errno. The read's also writes send first (sendThenRead): sent is what
// of it went out, sendErrno the write's error, and stuck says the socket
// had no room for the rest.
type rawCall struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	f     func(fd uintptr) bool

	send      []byte
	sent      int
	sendErrno syscall.Errno
	stuck     bool
}

// sendError is a Read's error when the request sendThenRead queued could
// not be written whole: Sent bytes of it went out.
type sendError struct {
	Sent int
	Err  error
}

func (e *sendError) Error() string { return e.Err.Error() }
func (e *sendError) Unwrap() error { return e.Err }

// quickSyscalls returns nc reading and writing as rawConn does when it is
// a TCP connection of the net package, whose socket is always
// non-blocking (a blocking one would hold its thread and P in a raw
// read); any other, an SSH target's tunnel, as it is.
func quickSyscalls(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &rawConn{Conn: nc, rc: rc}
	r, w := &c.r, &c.w
	r.f = func(fd uintptr) bool {
		if len(r.send) > 0 {
			// Written here, after the poller forgot what it saw ready
			// before this Read: the answer's arrival is news to it, so
			// waiting for it at once loses nothing.
			for r.sent < len(r.send) {
				n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.send[r.sent])), uintptr(len(r.send)-r.sent))
				switch e {
				case 0:
					r.sent += int(n)
				case syscall.EINTR:
				case syscall.EAGAIN:
					r.stuck = true
					return true
				default:
					r.sendErrno = e
					return true
				}
			}
			r.send = nil
			return false // wait for the answer in the poller
		}
		for {
			n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			r.n, r.errno = int(n), e
			return true
		}
	}
	w.f = func(fd uintptr) bool {
		for w.n < len(w.p) {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[w.n])), uintptr(len(w.p)-w.n))
			switch e {
			case 0:
				w.n += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				w.errno = e
				return true
			}
		}
		return true
	}
	return c
}

// sendThenRead queues p (a request) for the next Read to write before
// it reads, for a caller that reads the answer next and writes nothing
// else meanwhile. That Read writes p, then waits for the answer in the
// poller without first trying a read: a read right after a request's
// write finds nothing yet (EAGAIN) nearly always, a system call a
// request that wrk does not make. When p cannot be written whole, the
// Read returns a *sendError.
func (c *rawConn) sendThenRead(p []byte) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.send, c.r.sent, c.r.sendErrno, c.r.stuck = p, 0, 0, false
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r := &c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p, r.n, r.errno = p, 0, 0
	err := c.rc.Read(r.f)
	if len(r.send) > 0 {
		if err == nil && r.stuck {
			// The socket had no room for all of the request: the rest
			// waits for room as any write does, then the answer is read.
			var n int
			n, err = c.Write(r.send[r.sent:])
			r.sent += n
			if err == nil {
				r.send = nil
				err = c.rc.Read(r.f)
			}
		}
		if len(r.send) > 0 {
			sent := r.sent
			r.send, r.p = nil, nil
			if err == nil {
				err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", r.sendErrno)}
			}
			return 0, &sendError{Sent: sent, Err: err}
		}
	}
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", r.errno)}
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	w := &c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p, w.n, w.errno = p, 0, 0
	err := c.rc.Write(w.f)
	w.p = nil
	switch {
	case err != nil:
		return w.n, err
	case w.errno != 0:
		return w.n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", w.errno)}
	}
	return w.n, nil
}

// SyscallConn is the socket's, as for the net.Conn it wraps.
func (c *rawConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }
