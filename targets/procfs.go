package targets

// Parsers for the text of /proc. They are pure functions over bytes so that
// the local target (reading /proc directly) and the SSH target (reading the
// same files through a remote command) read a process the same way.

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// procStat is the part of /proc/PID/stat that lockstep reads.
type procStat struct {
	PID     int
	Comm    string // the executable's name, up to 15 bytes; may hold spaces and parentheses
	State   string // R, S, D, Z, T, t, X, I...
	PPID    int
	PGID    int
	Session int
	// StartTime is field 22: clock ticks after boot when the process
	// started. With the pid it names one process across pid reuse.
	StartTime uint64
}

// Zombie reports whether the process has exited and waits to be reaped
// (Z), or is being torn down (X). Either way it is no longer running.
func (s procStat) Zombie() bool { return s.State == "Z" || s.State == "X" }

// parseStat parses one /proc/PID/stat line. The command name sits in
// parentheses and may itself contain spaces and parentheses, so it spans
// from the first '(' to the last ')'; the fields are counted after that.
func parseStat(b []byte) (procStat, error) {
	b = bytes.TrimRight(b, "\n\x00")
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return procStat{}, fmt.Errorf("parse /proc stat %q: no command name in parentheses", clip(b))
	}
	var s procStat
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat %q: pid: %w", clip(b), err)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : closing])
	// Field n after the name is the (n-2)th: walked, not split, since a
	// scan of the process table parses every process's line.
	const startTimeField = 22
	rest := b[closing+1:]
	field := 2
	for field < startTimeField {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return procStat{}, fmt.Errorf("parse /proc stat %q: %d fields after the name, want at least %d", clip(b), field-2, startTimeField-2)
		}
		field++
		word := rest
		if i := bytes.IndexByte(rest, ' '); i >= 0 {
			word, rest = rest[:i], rest[i:]
		} else {
			rest = nil
		}
		var dst *int
		switch field {
		case 3:
			s.State = string(word)
			continue
		case 4:
			dst = &s.PPID
		case 5:
			dst = &s.PGID
		case 6:
			dst = &s.Session
		case startTimeField:
			if s.StartTime, err = strconv.ParseUint(string(word), 10, 64); err != nil {
				return procStat{}, fmt.Errorf("parse /proc stat %q: start time: %w", clip(b), err)
			}
			continue
		default:
			continue
		}
		if *dst, err = strconv.Atoi(string(word)); err != nil {
			return procStat{}, fmt.Errorf("parse /proc stat %q: field %d: %w", clip(b), field, err)
		}
	}
	return s, nil
}

// parseCmdline turns /proc/PID/cmdline (arguments each ending in NUL) into
// one line with the arguments separated by spaces, as ps shows it. It is
// "" for kernel threads and zombies, whose cmdline is empty.
func parseCmdline(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// procCommand is the command line lockstep shows and matches for a
// process: its cmdline, or, when that is empty (kernel threads, zombies),
// its name in brackets as ps shows it.
func procCommand(cmdline []byte, comm string) string {
	if c := parseCmdline(cmdline); c != "" {
		return c
	}
	return "[" + comm + "]"
}

// tcpListen is the state of a listening socket in /proc/net/tcp ("0A",
// TCP_LISTEN in the kernel's numbering).
const tcpListen = 0x0A

// tcpSocket is one line of /proc/net/tcp or /proc/net/tcp6.
type tcpSocket struct {
	Local  netip.AddrPort
	Remote netip.AddrPort
	State  int
	UID    int
	Inode  uint64 // 0 for sockets in TIME_WAIT, which no process owns
}

// parseNetTCP parses /proc/net/tcp or /proc/net/tcp6 (or both, one after
// the other), skipping header lines. A line that does not parse is an error: the format has been stable
// for decades, so a surprise means we are reading the wrong thing.
func parseNetTCP(b []byte) ([]tcpSocket, error) {
	var out []tcpSocket
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] == "sl" {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d %q: %d fields, want at least 10", i+1, clip(line), len(f))
		}
		var s tcpSocket
		var err error
		if s.Local, err = parseHexAddrPort(f[1]); err != nil {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d: local address: %w", i+1, err)
		}
		if s.Remote, err = parseHexAddrPort(f[2]); err != nil {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d: remote address: %w", i+1, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d: state %q: %w", i+1, f[3], err)
		}
		s.State = int(st)
		if s.UID, err = strconv.Atoi(f[7]); err != nil {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d: uid %q: %w", i+1, f[7], err)
		}
		if s.Inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
			return nil, fmt.Errorf("parse /proc/net/tcp line %d: inode %q: %w", i+1, f[9], err)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseHexAddrPort parses "0100007F:1F90" (IPv4) or the 32-digit IPv6 form.
// The kernel prints the address as 32-bit words in the host's byte order
// and the port as a plain number. We assume a little-endian host (x86,
// arm64, riscv, and nearly every machine lockstep will meet).
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: no port", s)
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	var raw [16]byte
	n := len(host) / 2
	if len(host) != 8 && len(host) != 32 {
		return netip.AddrPort{}, fmt.Errorf("%q: address has %d hex digits, want 8 or 32", s, len(host))
	}
	for i := 0; i < n; i++ {
		v, err := strconv.ParseUint(host[2*i:2*i+2], 16, 8)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("%q: address: %w", s, err)
		}
		// Byte i of the printed text is byte (3 - i%4) of its 32-bit word.
		raw[i/4*4+3-i%4] = byte(v)
	}
	var addr netip.Addr
	if n == 4 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		// An IPv4-mapped address on a tcp6 socket is an IPv4 peer; show it
		// as such.
		addr = netip.AddrFrom16(raw).Unmap()
	}
	return netip.AddrPortFrom(addr, uint16(p)), nil
}

// parseSocketLink returns the inode of a /proc/PID/fd/N link target of the
// form "socket:[12345]".
func parseSocketLink(link string) (uint64, bool) {
	rest, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, "]")
	if !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(rest, 10, 64)
	return ino, err == nil
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
