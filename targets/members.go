package targets

// How a launch finds every process it started, on either target. Start
// marks the launch's first process before it runs anything; a scan of the
// process table (readLocalScan, or sshMembersScript on a host) says which
// processes carry the mark, and members decides from the scan. One
// decision for both targets, so they cannot disagree.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
)

// markBytes is the size of a launch's mark: 48 random bits, so two
// launches never share one, and the mark fits below markLimitBase.
const markBytes = 6

// newMark returns a fresh mark for a launch.
func newMark() (string, error) {
	b := make([]byte, markBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("a mark for the launch: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// markEnv is the environment variable that marks a launch's processes,
// set to 1. The mark is in the name, not the value, so that a launch made
// by a process that is itself a launch (lockstep run by a lockstep plan)
// keeps both marks.
func markEnv(mark string) string { return "LOCKSTEP_LAUNCH_" + mark }

// markLimitBase is added to the mark to make the RLIMIT_RTTIME soft limit
// that marks a launch: 2^62 microseconds of real-time CPU without a
// blocking call (146,000 years), so the limit limits nothing. The kernel
// keeps a process's limits across fork, exec, setsid and an emptied
// environment, and nearly no program sets this one (it matters only to
// SCHED_FIFO and SCHED_RR threads).
const markLimitBase = uint64(1) << 62

// markLimit is the RLIMIT_RTTIME soft limit of a launch with mark, or
// false for a mark that is not one of Start's.
func markLimit(mark string) (uint64, bool) {
	if len(mark) != 2*markBytes {
		return 0, false
	}
	n, err := strconv.ParseUint(mark, 16, 64)
	if err != nil {
		return 0, false
	}
	return markLimitBase + n, true
}

// rttimeLine starts the line of /proc/PID/limits that holds RLIMIT_RTTIME.
const rttimeLine = "Max realtime timeout"

// limitsMarked reports whether /proc/PID/limits text b shows the soft
// RLIMIT_RTTIME limit lim.
//
// Both read b in place (a look after every run step reads every new
// process's limits and environment).
func limitsMarked(b []byte, lim uint64) bool {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(rttimeLine)); ok {
			f := bytes.Fields(rest)
			var want [20]byte
			return len(f) > 0 && bytes.Equal(f[0], strconv.AppendUint(want[:0], lim, 10))
		}
	}
	return false
}

// environMarked reports whether /proc/PID/environ text b holds the
// launch's variable, as a whole entry.
func environMarked(b []byte, mark string) bool {
	want := markEnv(mark) + "=1"
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if string(e) == want {
			return true
		}
	}
	return false
}

// procSeen is one process of a scan of the process table.
type procSeen struct {
	stat    procStat
	marked  bool // it carries the launch's mark (environment or limit)
	command string
}

// members picks from scan the live processes of the launch p, sorted by
// pid. A process is the launch's when it is provably so: it carries the
// mark, or it is p itself (same pid and start time), or the wrapper that
// leads p's group on an SSH host (p's group id, started no later than p).
// Then every process of a group or a session holding one of those is the
// launch's too (a process can only make or join a group inside its own
// session, and a session is made by the process that leads it, so such a
// group or session was made by the launch; a group or a session holding
// an excluded process is not taken so), and every descendant of any of
// them. A group whose every provable process has died is not taken on
// its id alone: the id may have come round again to a newcomer (pid_max
// is 32768 on many machines). pid 1 and the pids in exclude (lockstep
// itself, the scanning script) are never members, nor is what descends
// from them.
func members(p Process, scan []procSeen, exclude ...int) []ProcessInfo {
	never := func(pid int) bool { return pid <= 1 || slices.Contains(exclude, pid) }
	provable := func(st procStat) bool {
		switch {
		case st.PID == p.PID:
			return p.StartTime == 0 || st.StartTime == p.StartTime
		case st.PID == p.PGID:
			return p.StartTime != 0 && st.StartTime <= p.StartTime
		}
		return false
	}
	in := map[int]bool{}
	groups, sessions := map[int]bool{}, map[int]bool{}
	for _, s := range scan {
		st := s.stat
		if !never(st.PID) && (s.marked || provable(st)) {
			in[st.PID] = true
			groups[st.PGID], sessions[st.Session] = true, true
		}
	}
	// A group or a session that holds lockstep (or pid 1) is not the
	// launch's to take whole, whatever joined it: lockstep's session holds
	// the user's shell.
	for _, s := range scan {
		if never(s.stat.PID) {
			delete(groups, s.stat.PGID)
			delete(sessions, s.stat.Session)
		}
	}
	for _, s := range scan {
		st := s.stat
		if !never(st.PID) && (groups[st.PGID] || sessions[st.Session]) {
			in[st.PID] = true
		}
	}
	// Descendants: a child whose parent is a member is one, whatever it
	// did to its environment, limits, group or session since.
	for grew := true; grew; {
		grew = false
		for _, s := range scan {
			if !in[s.stat.PID] && in[s.stat.PPID] && !never(s.stat.PID) {
				in[s.stat.PID], grew = true, true
			}
		}
	}
	var out []ProcessInfo
	for _, s := range scan {
		st := s.stat
		if !in[st.PID] || st.Zombie() {
			continue
		}
		out = append(out, ProcessInfo{PID: st.PID, PPID: st.PPID, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime, State: st.State, Command: s.command})
	}
	slices.SortFunc(out, func(a, b ProcessInfo) int { return a.PID - b.PID })
	return out
}
