package targets

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"lockstep/targets/sshtest"
)

func TestReaching(t *testing.T) {
	sock := func(addr string, ino uint64) tcpSocket {
		return tcpSocket{Local: netip.MustParseAddrPort(addr), State: tcpListen, Inode: ino}
	}
	all := []tcpSocket{sock("0.0.0.0:80", 1), sock("127.0.0.1:80", 2), sock("[::]:80", 3), sock("127.0.0.1:81", 4), sock("10.0.0.1:80", 5)}
	for _, tc := range []struct {
		to   string
		want []uint64
	}{
		{"127.0.0.1:80", []uint64{2}}, // the exact address before the wildcard
		{"127.0.0.2:80", []uint64{1}}, // 0.0.0.0 takes the rest of IPv4
		{"[::1]:80", []uint64{3}},     // [::] takes IPv6
		{"127.0.0.1:82", nil},         // nothing on the port
		{"[::ffff:127.0.0.1]:81", []uint64{4}},
	} {
		var got []uint64
		for _, s := range reaching(all, netip.MustParseAddrPort(tc.to)) {
			got = append(got, s.Inode)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("reaching %s = %v, want %v", tc.to, got, tc.want)
		}
	}
	if got := reaching([]tcpSocket{sock("[::]:80", 3)}, netip.MustParseAddrPort("127.0.0.1:80")); len(got) != 1 {
		t.Errorf("a dual-stack [::] socket takes IPv4 too: got %v", got)
	}
}

func TestLimitsMark(t *testing.T) {
	lim, _ := markLimit("00ab12cd34ef")
	text := fmt.Sprintf("Limit                     Soft Limit           Hard Limit           Units\nMax realtime timeout      %d unlimited            us\n", lim)
	if got := limitsMark([]byte(text)); got != "00ab12cd34ef" {
		t.Errorf("limitsMark = %q, want 00ab12cd34ef", got)
	}
	for _, text := range []string{"Max realtime timeout      unlimited            unlimited            us\n", "Max realtime timeout      200000 unlimited us\n", ""} {
		if got := limitsMark([]byte(text)); got != "" {
			t.Errorf("limitsMark(%q) = %q, want none", text, got)
		}
	}
}

// listenerCases checks ListenerOf on t against a listener of this test
// process, on the exact address and through the wildcard.
func listenerCases(t *testing.T, tg Target) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := netip.MustParseAddrPort(l.Addr().String())
	ans, err := ListenerOf(ctx, tg, addr)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readLocalStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(ans) != 1 || ans[0].PID != os.Getpid() || ans[0].StartTime != st.StartTime || ans[0].PGID != st.PGID || ans[0].Address != addr.String() || ans[0].Command == "" {
		t.Errorf("ListenerOf(%s) = %+v, want this process (%d, start %d)", addr, ans, os.Getpid(), st.StartTime)
	}
	// Looked for among likely pids first: the holder among them, or, when
	// none holds it, the full walk finds it all the same.
	for _, likely := range [][]int{{os.Getpid()}, {1, os.Getppid()}} {
		got, err := ListenerOf(ctx, tg, addr, likely...)
		if err != nil || len(got) != 1 || got[0].PID != os.Getpid() || got[0].StartTime != st.StartTime {
			t.Errorf("ListenerOf(%s, likely %v) = %+v, %v; want this process", addr, likely, got, err)
		}
	}
	// Nothing on another port: no answerer, no error.
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := netip.MustParseAddrPort(free.Addr().String())
	free.Close()
	if ans, err := ListenerOf(ctx, tg, freeAddr); err != nil || len(ans) != 0 {
		t.Errorf("ListenerOf a closed port = %+v, %v", ans, err)
	}
	a, ok, err := ProcessOf(ctx, tg, os.Getpid())
	if err != nil || !ok || a.StartTime != st.StartTime || a.PGID != st.PGID {
		t.Errorf("ProcessOf(self) = %+v, %v, %v", a, ok, err)
	}
}

func TestListenerOfLocal(t *testing.T) { listenerCases(t, NewLocal()) }

func TestListenerOfSSH(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	listenerCases(t, testSSH(t, srv))
}

// A launch's mark is read back from who listens: what tells a server of
// this attempt from another.
func TestListenerOfMark(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := NewLocal()
	port := freeTCPPort(t)
	log := t.TempDir() + "/srv.log"
	p, err := l.Start(ctx, Command{Line: fmt.Sprintf("exec python3 -m http.server --bind 127.0.0.1 %d", port)}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(context.Background(), p, time.Second)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	for {
		ans, err := ListenerOf(ctx, l, addr)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans) > 0 {
			if ans[0].PID != p.PID || ans[0].Mark != p.Mark {
				t.Errorf("ListenerOf = %+v, want pid %d with mark %s", ans[0], p.PID, p.Mark)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the server never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
