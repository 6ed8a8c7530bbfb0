package loads

import (
	"errors"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// watchIdle returns a check of whether nc (raw beneath TLS) is still open
// at the server's end, made before a request is written on it: a server
// closes a kept-alive connection it found idle (uvicorn after 5 s, nginx
// after 75 s), and a request written on it then would be lost after it
// was sent. The check is a one-byte recv with MSG_PEEK|MSG_DONTWAIT: no
// byte is taken and it never waits. Connections that are not sockets (an
// SSH tunnel's) give nil: nothing can be seen there without reading.
func (c *client1) watchIdle(raw net.Conn) func() bool {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	// The closure is made once per connection, so a check allocates nothing.
	var n uintptr
	var errno syscall.Errno
	buf := new([1]byte)
	peek := func(fd uintptr) bool {
		n, _, errno = syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		return true
	}
	return func() bool {
		if c.br.Buffered() > 0 {
			return true // bytes the server sent unasked: reading the response judges them
		}
		if err := rc.Read(peek); err != nil {
			return true // cannot tell (the run is ending): writing will say
		}
		switch {
		case errno == syscall.EAGAIN:
			return true
		case errno != 0, n == 0: // reset, or closed
			return false
		case c.w.tls == nil:
			return true // unsolicited bytes, as above
		}
		return c.tlsAlive()
	}
}

// tlsAlive reads what is pending on an idle TLS connection: a close_notify
// alert (closed) or a post-handshake message such as a session ticket
// (alive); only the TLS layer can tell them apart.
func (c *client1) tlsAlive() bool {
	if c.runCtx.Err() != nil {
		return true // keep the deadline that aborts the connection
	}
	c.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
	c.deadline = time.Time{} // the next request sets its own
	_, err := c.br.Peek(1)
	var ne net.Error
	return err == nil || errors.As(err, &ne) && ne.Timeout()
}
