package loads

import (
	"io"
	"net"
	"os"
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
	// The closures' arguments and results, and the closures themselves,
	// made once per connection so that a request allocates nothing.
	p           []byte
	n           int
	errno       syscall.Errno
	read, write func(fd uintptr) bool
}

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
	c.read = func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.p[0])), uintptr(len(c.p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			c.n, c.errno = int(n), e
			return true
		}
	}
	c.write = func(fd uintptr) bool {
		for c.n < len(c.p) {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.p[c.n])), uintptr(len(c.p)-c.n))
			switch e {
			case 0:
				c.n += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				c.errno = e
				return true
			}
		}
		return true
	}
	return c
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p, c.n, c.errno = p, 0, 0
	err := c.rc.Read(c.read)
	c.p = nil
	switch {
	case err != nil:
		return 0, err
	case c.errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", c.errno)}
	case c.n == 0:
		return 0, io.EOF
	}
	return c.n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	c.p, c.n, c.errno = p, 0, 0
	err := c.rc.Write(c.write)
	c.p = nil
	switch {
	case err != nil:
		return c.n, err
	case c.errno != 0:
		return c.n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", c.errno)}
	}
	return c.n, nil
}

// SyscallConn is the socket's, as for the net.Conn it wraps.
func (c *rawConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }
