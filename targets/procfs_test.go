package targets

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want procStat
	}{
		{
			name: "plain",
			line: "5915 (cat) R 5913 5913 4041 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 24600 3133440 350 18446744073709551615 94133691609088\n",
			want: procStat{PID: 5915, Comm: "cat", State: "R", PPID: 5913, PGID: 5913, Session: 4041, StartTime: 24600},
		},
		{
			name: "name with spaces and parentheses",
			line: "42 (a) b (c)) Z 1 40 40 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 987654321 0 0",
			want: procStat{PID: 42, Comm: "a) b (c)", State: "Z", PPID: 1, PGID: 40, Session: 40, StartTime: 987654321},
		},
		{
			name: "empty name",
			line: "7 () S 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
			want: procStat{PID: 7, Comm: "", State: "S", PPID: 2, StartTime: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseStat = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseStatErrors(t *testing.T) {
	for _, line := range []string{
		"",
		"12 cat R 1 1 1",
		"x (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
		"12 (cat) R 1 1 1 0 -1 0 0 0",
		"12 (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 notanumber",
		") 12 (cat",
	} {
		if s, err := parseStat([]byte(line)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", line, s)
		}
	}
}

func TestZombie(t *testing.T) {
	for state, want := range map[string]bool{"Z": true, "X": true, "S": false, "R": false, "D": false, "T": false} {
		if got := (procStat{State: state}).Zombie(); got != want {
			t.Errorf("state %s: Zombie() = %v, want %v", state, got, want)
		}
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sleep\x00100\x00", "sleep 100"},
		{"/bin/sh\x00-c\x00echo a  b\x00", "/bin/sh -c echo a  b"},
		{"", ""},
		// A process may rewrite its argv (nginx: master process ...) without
		// a NUL at the end.
		{"nginx: master process /usr/sbin/nginx", "nginx: master process /usr/sbin/nginx"},
	}
	for _, tt := range tests {
		if got := parseCmdline([]byte(tt.in)); got != tt.want {
			t.Errorf("parseCmdline(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := procCommand(nil, "kworker/0:1"); got != "[kworker/0:1]" {
		t.Errorf("procCommand of a kernel thread = %q, want [kworker/0:1]", got)
	}
	if got := procCommand([]byte("sleep\x009\x00"), "sleep"); got != "sleep 9" {
		t.Errorf("procCommand = %q, want %q", got, "sleep 9")
	}
}

// Captured on this machine: python listening on 0.0.0.0:2024, [::]:45679,
// [::1]:45678, and an established IPv4 connection.
const netTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651 1 00000000e93bb965 100 0 0 10 0
   1: 0100007F:B26E 0100007F:07E8 01 00000000:00000000 00:00000000 00000000  1000        0 7781 1 00000000e93bb965 20 4 30 10 -1
   2: 0100007F:B270 0100007F:07E8 06 00000000:00000000 03:00001770 00000000     0        0 0 3 00000000e93bb965
`

const netTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:B26F 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 10199 1 00000000f2f2a1cc 100 0 0 10 0
   1: 00000000000000000000000001000000:B26E 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 10198 1 000000000afa1f25 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 000000000afa1f25 100 0 0 10 0
   3: B80D01200000000000000000A1B2C3D4:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 556 1 000000000afa1f25 100 0 0 10 0
`

func TestParseNetTCP(t *testing.T) {
	// Both files in one input, as a remote command may cat them together.
	got, err := parseNetTCP([]byte(netTCP + netTCP6))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3+4 {
		t.Fatalf("got %d sockets from both files, want 7", len(got))
	}
	got = got[:3]
	want := []tcpSocket{
		{Local: netip.MustParseAddrPort("0.0.0.0:2024"), Remote: netip.MustParseAddrPort("0.0.0.0:0"), State: tcpListen, UID: 0, Inode: 651},
		{Local: netip.MustParseAddrPort("127.0.0.1:45678"), Remote: netip.MustParseAddrPort("127.0.0.1:2024"), State: 1, UID: 1000, Inode: 7781},
		{Local: netip.MustParseAddrPort("127.0.0.1:45680"), Remote: netip.MustParseAddrPort("127.0.0.1:2024"), State: 6, UID: 0, Inode: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sockets, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("socket %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	got6, err := parseNetTCP([]byte(netTCP6))
	if err != nil {
		t.Fatal(err)
	}
	want6 := []string{"[::]:45679", "[::1]:45678", "127.0.0.1:8080", "[2001:db8::d4c3:b2a1]:80"}
	if len(got6) != len(want6) {
		t.Fatalf("got %d IPv6 sockets, want %d", len(got6), len(want6))
	}
	for i, w := range want6 {
		if s := got6[i].Local.String(); s != w {
			t.Errorf("IPv6 socket %d local = %s, want %s", i, s, w)
		}
		if got6[i].State != tcpListen {
			t.Errorf("IPv6 socket %d state = %x, want 0A", i, got6[i].State)
		}
	}
}

func TestParseNetTCPErrors(t *testing.T) {
	for _, in := range []string{
		"   0: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 651 1",
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000",
		"   0: 0100007:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 651 1",
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 x 1",
		"   0: 0100007F:1F90 00000000:0000 ZZ 00000000:00000000 00:00000000 00000000 0 0 1 1",
		"   0: 0100007G:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1 1",
		"   0: 0100007F:1F9000 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1 1",
	} {
		if s, err := parseNetTCP([]byte(in)); err == nil {
			t.Errorf("parseNetTCP(%q) = %+v, want an error", in, s)
		}
	}
}

func TestParseSocketLink(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"socket:[12345]", 12345, true},
		{"pipe:[12345]", 0, false},
		{"/dev/null", 0, false},
		{"socket:[]", 0, false},
		{"socket:[12", 0, false},
		{"anon_inode:[eventpoll]", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseSocketLink(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSocketLink(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("5915 (cat) R 5913 5913 4041 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 24600 3133440"))
	f.Add([]byte("42 (a) b (c)) Z 1 40 40 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 987654321 0 0"))
	f.Add([]byte(") ("))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err == nil && strings.ContainsAny(s.State, " \t\n") {
			t.Errorf("state %q holds white space", s.State)
		}
	})
}

func FuzzParseNetTCP(f *testing.F) {
	f.Add([]byte(netTCP))
	f.Add([]byte(netTCP6))
	f.Add([]byte("0: :"))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, err := parseNetTCP(b)
		if err != nil {
			return
		}
		for _, s := range socks {
			if !s.Local.IsValid() {
				t.Errorf("socket %+v parsed with an invalid local address", s)
			}
		}
	})
}

func FuzzParseCmdline(f *testing.F) {
	f.Add([]byte("sleep\x00100\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c := parseCmdline(b); strings.Contains(c, "\x00") {
			t.Errorf("parseCmdline(%q) = %q keeps a NUL", b, c)
		}
	})
}
