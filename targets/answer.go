package targets

// Who answers a connection: the process that holds the listening socket
// a TCP connection to an address of the target reaches, with what names
// it across pid reuse (its start time) and the launch mark it carries.
// The runner tells from these whether a probe or a load was answered by
// a process of its own attempt, and finds again a server an earlier
// attempt launched (by the listener of a port, or a pidfile).

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Answerer is a process holding a listening socket (or named by a
// pidfile): who answers.
type Answerer struct {
	Address   string // the listening socket's address: "127.0.0.1:8080", "0.0.0.0:8080"
	PID       int    // 0: a process this user cannot see holds the socket
	PGID      int
	Session   int
	StartTime uint64 // as Process.StartTime
	Command   string
	// Mark is the launch mark the process carries (Start's, through
	// RLIMIT_RTTIME, which every descendant inherits), "" for none.
	Mark string
}

// answering is a target that can tell who answers; both of lockstep's
// targets are.
type answering interface {
	listenerOf(ctx context.Context, addr netip.AddrPort, likely []int) ([]Answerer, error)
	processOf(ctx context.Context, pid int) (Answerer, bool, error)
}

var (
	_ answering = (*Local)(nil)
	_ answering = (*SSH)(nil)
)

// ListenerOf lists the processes holding the listening socket that a TCP
// connection from the target to addr reaches: one bound to addr itself,
// else to the wildcard address of its family (0.0.0.0, or [::], which
// takes IPv4 too unless the socket is IPv6-only), as the kernel chooses.
// A socket held by several processes (a server's forked workers) gives
// one Answerer each, by pid; one whose holder cannot be seen gives PID 0.
// Nothing listening is an empty list and no error. On an SSH target it
// is one script, one round trip.
//
// likely are pids to look at first (the caller's own servers): when one
// of them holds the socket, the holders among them are the answer and no
// other process is looked at, which saves a walk of every process's
// descriptors (tens of milliseconds on a busy host).
func ListenerOf(ctx context.Context, t Target, addr netip.AddrPort, likely ...int) ([]Answerer, error) {
	a, ok := t.(answering)
	if !ok {
		return nil, fmt.Errorf("target %s cannot tell who listens on %s", t.Name(), addr)
	}
	return a.listenerOf(ctx, addr, likely)
}

// ProcessOf describes the live process pid (a pidfile's): false when
// there is none, or only a zombie.
func ProcessOf(ctx context.Context, t Target, pid int) (Answerer, bool, error) {
	a, ok := t.(answering)
	if !ok {
		return Answerer{}, false, fmt.Errorf("target %s cannot describe process %d", t.Name(), pid)
	}
	return a.processOf(ctx, pid)
}

// reaching picks, from the listening sockets on addr's port, those a
// connection to addr reaches.
func reaching(socks []tcpSocket, addr netip.AddrPort) []tcpSocket {
	var exact, wild4, wild6 []tcpSocket
	want := addr.Addr().Unmap()
	for _, s := range socks {
		if s.State != tcpListen || s.Local.Port() != addr.Port() || s.Inode == 0 {
			continue
		}
		a := s.Local.Addr()
		switch {
		case a == want:
			exact = append(exact, s)
		case a.IsUnspecified() && a.Is4() && want.Is4():
			wild4 = append(wild4, s)
		case a.IsUnspecified() && a.Is6():
			wild6 = append(wild6, s)
		}
	}
	for _, set := range [][]tcpSocket{exact, wild4, wild6} {
		if len(set) > 0 {
			return set
		}
	}
	return nil
}

// limitsMark reads the launch mark from /proc/PID/limits text: the soft
// RLIMIT_RTTIME limit Start sets (markLimit), "" for a process with
// none.
func limitsMark(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, rttimeLine)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return ""
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n < markLimitBase || n-markLimitBase >= 1<<(8*markBytes) {
			return ""
		}
		return fmt.Sprintf("%0*x", 2*markBytes, n-markLimitBase)
	}
	return ""
}

// answerers joins the sockets reached with their holders (pid -> the
// socket inodes it holds) and what was read of each holder.
func answerers(socks []tcpSocket, holders map[uint64][]int, info map[int]Answerer) []Answerer {
	var out []Answerer
	for _, s := range socks {
		pids := holders[s.Inode]
		if len(pids) == 0 {
			out = append(out, Answerer{Address: s.Local.String()})
			continue
		}
		for _, pid := range pids {
			a, ok := info[pid]
			if !ok {
				continue // gone between the two looks
			}
			a.Address = s.Local.String()
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Answerer) int { return a.PID - b.PID })
	return out
}

func (l *Local) listenerOf(ctx context.Context, addr netip.AddrPort, likely []int) ([]Answerer, error) {
	port := int(addr.Port())
	socks, err := diagListeners(port)
	if err != nil {
		socks, err = procListeners(port)
	}
	if err != nil {
		return nil, fmt.Errorf("who listens on %s: %w", addr, err)
	}
	socks = reaching(socks, addr)
	if len(socks) == 0 {
		return nil, nil
	}
	want := map[uint64]bool{}
	for _, s := range socks {
		want[s.Inode] = true
	}
	holders := map[uint64][]int{}
	info := map[int]Answerer{}
	look := func(pid int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		held := false
		for _, ino := range localSockets(pid) {
			if want[ino] && !slices.Contains(holders[ino], pid) {
				holders[ino] = append(holders[ino], pid)
				held = true
			}
		}
		if held {
			if a, ok := localAnswerer(pid); ok {
				info[pid] = a
			}
		}
		return nil
	}
	for _, pid := range likely {
		if _, seen := info[pid]; pid > 0 && !seen {
			if err := look(pid); err != nil {
				return nil, fmt.Errorf("who listens on %s: %w", addr, err)
			}
		}
	}
	if len(info) > 0 {
		return answerers(socks, holders, info), nil
	}
	if err := eachLocalProcess(look); err != nil {
		return nil, fmt.Errorf("who listens on %s: %w", addr, err)
	}
	return answerers(socks, holders, info), nil
}

// localSockets are the inodes of the sockets process pid holds open;
// none for a process gone, or another user's.
func localSockets(pid int) []uint64 {
	fdDir := filepath.Join(localProcRoot, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil
	}
	var out []uint64
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue
		}
		if ino, ok := parseSocketLink(link); ok {
			out = append(out, ino)
		}
	}
	return out
}

func (l *Local) processOf(ctx context.Context, pid int) (Answerer, bool, error) {
	if err := ctx.Err(); err != nil {
		return Answerer{}, false, err
	}
	a, ok := localAnswerer(pid)
	return a, ok, nil
}

// localAnswerer reads one live process's stat, command line and mark.
func localAnswerer(pid int) (Answerer, bool) {
	st, cmdline, err := readLocalProc(pid)
	if err != nil || st.Zombie() {
		return Answerer{}, false
	}
	limits, _ := os.ReadFile(filepath.Join(localProcRoot, strconv.Itoa(pid), "limits"))
	return Answerer{PID: pid, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime, Command: procCommand(cmdline, st.Comm), Mark: limitsMark(limits)}, true
}

// procInfoScript prints, for each pid in $pids, "==pid PID", its stat
// line, its RLIMIT_RTTIME line and its command line (NULs as spaces).
const procInfoScript = `for x in $pids; do
	[ -r /proc/$x/stat ] || continue
	echo "==pid $x"
	cat /proc/$x/stat 2>/dev/null
	grep '^Max realtime timeout' /proc/$x/limits 2>/dev/null
	tr '\0\n' '  ' </proc/$x/cmdline 2>/dev/null
	echo
done
exit 0
`

// portSocketsScript prints the TCP sockets listening on $port (from
// /proc/net/tcp and tcp6), then "==lockstep-fds", and leaves in "$@" the
// find(1) tests matching a descriptor of any of them (-lname patterns
// with the brackets escaped, which fnmatch would read as a set); it
// exits when there is none. listenScript and answerScript go on from it.
const portSocketsScript = `hex=$(printf ':%04X' "$port")
socks=$(awk -v h="$hex" '$4 == "0A" && substr($2, length($2) - 4) == h' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
[ -n "$socks" ] || exit 0
printf '%s\n' "$socks"
echo "==lockstep-fds"
set --
while read -r _ _ _ _ _ _ _ _ _ ino _; do
	[ $# -gt 0 ] && set -- "$@" -o
	set -- "$@" -lname "socket:\\[$ino\\]"
done <<EOF
$socks
EOF
`

// answerScript prints the listening sockets on $port, then their holders
// as "/proc/PID/fd socket:[INODE]" (one find over every /proc/PID/fd, as
// listenScript), then each holder as procInfoScript does: one round trip.
// The processes in $likely are looked at first; only when none of them
// holds one of the sockets are all of them.
const answerScript = portSocketsScript + `fds=
for x in $likely; do
	f=$(find /proc/$x/fd -maxdepth 1 \( "$@" \) -printf '%h %l\n' 2>/dev/null)
	[ -n "$f" ] && fds="$fds$f
"
done
[ -n "$fds" ] || fds=$(find /proc/[0-9]*/fd -maxdepth 1 \( "$@" \) -printf '%h %l\n' 2>/dev/null)
printf '%s\n' "$fds"
echo "==lockstep-procs"
set -f
pids= seen=' '
for w in $fds; do
	case $w in /proc/*/fd)
		x=${w#/proc/} x=${x%/fd}
		case $seen in *" $x "*) ;; *) seen="$seen$x " pids="$pids $x" ;; esac
		;;
	esac
done
` + procInfoScript

func (s *SSH) listenerOf(ctx context.Context, addr netip.AddrPort, likely []int) ([]Answerer, error) {
	what := "who listens on " + addr.String()
	var pids []string
	for _, pid := range likely {
		if pid > 0 {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	out, err := s.script(ctx, what, fmt.Sprintf("port=%d likely='%s'\n", addr.Port(), strings.Join(pids, " "))+answerScript)
	if err != nil {
		return nil, err
	}
	tables, rest, _ := bytes.Cut(out, []byte("==lockstep-fds\n"))
	fdText, procText, _ := bytes.Cut(rest, []byte("==lockstep-procs\n"))
	all, err := parseNetTCP(tables)
	if err != nil {
		return nil, s.errorf("%s: %w", what, err)
	}
	return answerers(reaching(all, addr), socketOwners(fdText), parseProcInfo(procText)), nil
}

// socketOwners reads find's "/proc/PID/fd socket:[INODE]" lines (the
// host's scripts print them): socket inode -> the pids holding it, each
// once.
func socketOwners(fdText []byte) map[uint64][]int {
	owners := map[uint64][]int{}
	for _, l := range strings.Split(string(fdText), "\n") {
		dir, link, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		pidText, _ := strings.CutPrefix(dir, "/proc/")
		pidText, _ = strings.CutSuffix(pidText, "/fd")
		pid, err := strconv.Atoi(pidText)
		ino, isSock := parseSocketLink(link)
		if err != nil || !isSock || slices.Contains(owners[ino], pid) {
			continue
		}
		owners[ino] = append(owners[ino], pid)
	}
	return owners
}

func (s *SSH) processOf(ctx context.Context, pid int) (Answerer, bool, error) {
	if pid <= 0 {
		return Answerer{}, false, nil
	}
	out, err := s.script(ctx, fmt.Sprintf("process %d", pid), fmt.Sprintf("pids=%d\n", pid)+procInfoScript)
	if err != nil {
		return Answerer{}, false, err
	}
	a, ok := parseProcInfo(out)[pid]
	return a, ok, nil
}

// parseProcInfo reads procInfoScript's output: the live processes it
// described, zombies left out.
func parseProcInfo(b []byte) map[int]Answerer {
	out := map[int]Answerer{}
	for _, part := range bytes.Split(b, []byte("==pid "))[1:] {
		lines := strings.SplitN(string(part), "\n", 4)
		if len(lines) < 3 {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
		if err != nil {
			continue
		}
		st, err := parseStat([]byte(lines[1]))
		if err != nil || st.Zombie() || st.PID != pid {
			continue
		}
		a := Answerer{PID: pid, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime}
		cmd := lines[2]
		if strings.HasPrefix(cmd, rttimeLine) {
			a.Mark = limitsMark([]byte(cmd))
			cmd = ""
			if len(lines) > 3 {
				cmd, _, _ = strings.Cut(lines[3], "\n")
			}
		}
		a.Command = strings.TrimSpace(cmd)
		if a.Command == "" {
			a.Command = "[" + st.Comm + "]"
		}
		out[pid] = a
	}
	return out
}
