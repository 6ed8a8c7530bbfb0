package targets

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMembers(t *testing.T) {
	// The launch: pid 100 leads group and session 100, started at tick 50.
	launch := Process{PID: 100, PGID: 100, Session: 100, StartTime: 50, Mark: "0123456789ab"}
	ps := func(pid, ppid, pgid, sid int, start uint64, state string, marked bool) procSeen {
		return procSeen{stat: procStat{PID: pid, PPID: ppid, PGID: pgid, Session: sid, StartTime: start, State: state}, marked: marked}
	}
	tests := []struct {
		name string
		p    Process
		scan []procSeen
		want []int
	}{
		{
			name: "the launch, its group, its session, its marked and their children",
			p:    launch,
			scan: []procSeen{
				ps(1, 0, 1, 1, 1, "S", false),
				ps(100, 1, 100, 100, 50, "S", false),
				ps(101, 100, 100, 100, 51, "S", false), // a child in the group
				ps(102, 1, 102, 100, 52, "S", false),   // left the group, not the session
				ps(103, 1, 103, 103, 53, "S", true),    // setsid, double fork: the mark alone
				ps(104, 103, 104, 104, 54, "S", false), // its child, unmarked (reset its limits, env -i)
				ps(105, 1, 105, 105, 55, "S", false),   // a stranger
				ps(106, 100, 100, 100, 56, "Z", false), // a zombie of the group: dead
				ps(107, 105, 105, 105, 57, "S", false), // a stranger's child
				ps(200, 1, 200, 200, 10, "S", false),   // lockstep
				ps(201, 200, 201, 201, 58, "S", true),  // excluded by the caller
			},
			want: []int{100, 101, 102, 103, 104},
		},
		{
			name: "the leader dead, its group's workers live on: one marked proves the group",
			p:    launch,
			scan: []procSeen{
				ps(101, 1, 100, 100, 51, "S", true),
				ps(102, 1, 100, 100, 52, "S", false),
			},
			want: []int{101, 102},
		},
		{
			name: "a daemon's own group and session, made by a marked process",
			p:    launch,
			scan: []procSeen{
				ps(300, 1, 300, 300, 60, "S", true),
				ps(301, 1, 300, 300, 61, "S", false), // a worker orphaned, its mark gone
			},
			want: []int{300, 301},
		},
		{
			name: "the id alone, nothing provable left: a newcomer's daemon may hold it",
			p:    launch,
			scan: []procSeen{
				ps(101, 1, 100, 100, 91, "S", false),
			},
			want: nil,
		},
		{
			name: "pid 100 reused by a newcomer leading its own group: not ours",
			p:    Process{PID: 100, PGID: 100, Session: 100, StartTime: 50},
			scan: []procSeen{
				ps(100, 1, 100, 100, 90, "S", false),
				ps(101, 100, 100, 100, 91, "S", false),
			},
			want: nil,
		},
		{
			name: "an ssh wrapper leads the group, started before the command",
			p:    Process{PID: 101, PGID: 100, Session: 100, StartTime: 51},
			scan: []procSeen{
				ps(100, 1, 100, 100, 50, "S", false),
				ps(101, 100, 100, 100, 51, "S", false),
				ps(102, 101, 100, 100, 52, "S", false),
			},
			want: []int{100, 101, 102},
		},
		{
			name: "a mark alone (a start cut short: no pid known)",
			p:    Process{Mark: "0123456789ab"},
			scan: []procSeen{
				ps(1, 0, 1, 1, 1, "S", true),
				ps(300, 1, 300, 300, 60, "S", true),
				ps(301, 1, 301, 301, 61, "S", false),
			},
			want: []int{300},
		},
		{
			name: "a marked process in lockstep's own group and session: not the rest of them",
			p:    Process{Mark: "0123456789ab"},
			scan: []procSeen{
				ps(150, 1, 150, 150, 40, "S", false),   // the user's shell
				ps(201, 150, 201, 150, 45, "S", false), // lockstep (excluded), in the shell's session
				ps(202, 150, 202, 150, 46, "S", false), // another job of the shell
				ps(203, 201, 201, 150, 47, "S", true),  // a command lockstep ran, not made a session
				ps(204, 203, 201, 150, 48, "S", false), // its child
			},
			want: []int{203, 204},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, m := range members(tt.p, tt.scan, 201) {
				got = append(got, m.PID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMarkReading(t *testing.T) {
	lim, ok := markLimit("0000000000ff")
	if !ok || lim != markLimitBase+255 {
		t.Fatalf("markLimit = %d, %v", lim, ok)
	}
	if _, ok := markLimit("not a mark"); ok {
		t.Error("markLimit of a bad mark: ok")
	}
	limits := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max realtime priority     0                    0                    \n" +
		"Max realtime timeout      4611686018427388159  unlimited            us        \n"
	if !limitsMarked([]byte(limits), lim) {
		t.Error("limits with the mark: not marked")
	}
	if limitsMarked([]byte(strings.Replace(limits, "4611686018427388159", "unlimited", 1)), lim) {
		t.Error("limits without the mark: marked")
	}
	env := "PATH=/bin\x00LOCKSTEP_LAUNCH_0000000000ff=1\x00"
	if !environMarked([]byte(env), "0000000000ff") {
		t.Error("environment with the mark: not marked")
	}
	if environMarked([]byte("X=LOCKSTEP_LAUNCH_0000000000ff=1\x00"), "0000000000ff") {
		t.Error("the mark inside another variable's value: marked")
	}
}

// TestLocalMembersFindEscapees launches a tree whose members left by every
// road a process has without privileges: a session of its own, a double
// fork, an emptied environment. Members finds them all, and Stop ends them.
func TestLocalMembersFindEscapees(t *testing.T) {
	l := NewLocal()
	ctx := localTestContext(t)
	p := localStart(t, l, `(setsid env -i sleep 100 & echo $!) ; (setsid sh -c 'sleep 100 & echo $!' &) ; exec sleep 100`)
	lines := localLogLines(t, p, 2)
	ms, err := l.Members(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, m := range ms {
		pids = append(pids, m.PID)
	}
	for _, k := range append(lines, "") {
		pid := p.PID
		if k != "" {
			pid = localAtoi(t, k)
		}
		if !slices.Contains(pids, pid) {
			t.Errorf("pid %d is not among the members %v", pid, pids)
		}
	}
	// Another launch's processes are not this one's.
	q := localStart(t, l, "exec sleep 100")
	for _, m := range ms {
		if m.PID == q.PID {
			t.Errorf("another launch's pid %d among the members", q.PID)
		}
	}
	if err := l.Stop(ctx, p, localPatience); err != nil {
		t.Fatal(err)
	}
	for _, k := range lines {
		if !localGone(localAtoi(t, k)) {
			t.Errorf("pid %s alive after Stop", k)
		}
	}
	if localGone(q.PID) {
		t.Error("Stop ended another launch")
	}
}

// BenchmarkLocalMembers is the cost of one look for a launch's processes
// (every process's stat, limits and, when unmarked, environment), which
// Stop repeats every 20 ms and a daemonizing launch a few times.
func BenchmarkLocalMembers(b *testing.B) {
	l := NewLocal()
	ctx := b.Context()
	p, err := l.Start(ctx, Command{Line: "exec sleep 300"}, filepath.Join(b.TempDir(), "p.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Stop(context.Background(), p, time.Second) })
	b.Run("Members", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Members(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The reference: a process probe's look (every stat and command line).
	b.Run("Processes", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Processes(ctx, "^sleep 300$"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Inspect", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Inspect(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
