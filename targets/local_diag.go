package targets

// Listening sockets through the kernel's sock_diag netlink interface, as
// ss(8) finds them. Reading /proc/net/tcp makes the kernel walk its whole
// connection table (about 1.7 ms a file here even when it lists a single
// socket, more on a loaded server); a sock_diag dump restricted to
// listening sockets walks only the listening table.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	inetDiagReqLen = 56 // struct inet_diag_req_v2
	inetDiagMsgLen = 72 // struct inet_diag_msg
)

// diagListeners returns the listening TCP sockets on port, IPv4 and IPv6.
func diagListeners(port int) ([]tcpSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers at once; the timeout only guards against a
	// kernel that never does.
	tv := unix.Timeval{Sec: 5}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("sock_diag timeout: %w", err)
	}
	var out []tcpSocket
	buf := make([]byte, 64<<10)
	for i, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := diagDump(fd, buf, uint32(i+1), family, port)
		if err != nil {
			return nil, err
		}
		out = append(out, socks...)
	}
	return out, nil
}

// diagDump asks for one family's listening TCP sockets on port.
func diagDump(fd int, buf []byte, seq uint32, family uint8, port int) ([]tcpSocket, error) {
	req := make([]byte, unix.SizeofNlMsghdr+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], seq)
	r := req[unix.SizeofNlMsghdr:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 1<<tcpListen)
	// The kernel skips listening sockets on other ports itself.
	binary.BigEndian.PutUint16(r[8:], uint16(port))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag request: %w", err)
	}

	var out []tcpSocket
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag answer: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(ne.Uint32(m.Data)); errno != 0 {
						return nil, fmt.Errorf("sock_diag: %w", syscall.Errno(errno))
					}
				}
				return out, nil
			case unix.SOCK_DIAG_BY_FAMILY:
				s, err := parseDiagMsg(m.Data)
				if err != nil {
					return nil, err
				}
				if s.State == tcpListen && int(s.Local.Port()) == port {
					out = append(out, s)
				}
			}
		}
	}
}

// parseDiagMsg decodes a struct inet_diag_msg: family, state, then the
// socket id (ports and addresses in network byte order), then queue
// lengths, uid and inode in host order.
func parseDiagMsg(b []byte) (tcpSocket, error) {
	if len(b) < inetDiagMsgLen {
		return tcpSocket{}, fmt.Errorf("sock_diag message of %d bytes, want %d", len(b), inetDiagMsgLen)
	}
	addr := func(raw []byte) netip.Addr {
		if b[0] == unix.AF_INET {
			return netip.AddrFrom4([4]byte(raw[:4]))
		}
		return netip.AddrFrom16([16]byte(raw[:16])).Unmap()
	}
	if b[0] != unix.AF_INET && b[0] != unix.AF_INET6 {
		return tcpSocket{}, fmt.Errorf("sock_diag message of family %d", b[0])
	}
	be, ne := binary.BigEndian, binary.NativeEndian
	return tcpSocket{
		Local:  netip.AddrPortFrom(addr(b[8:24]), be.Uint16(b[4:])),
		Remote: netip.AddrPortFrom(addr(b[24:40]), be.Uint16(b[6:])),
		State:  int(b[1]),
		UID:    int(ne.Uint32(b[64:])),
		Inode:  uint64(ne.Uint32(b[68:])),
	}, nil
}
