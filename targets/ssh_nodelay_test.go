package targets

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"lockstep/targets/sshtest"
)

// TestSSHDialAfterRunNeedsNoWorker: sshd turns Nagle off on a connection
// when a session runs a command (strace of sshd: setsockopt TCP_NODELAY
// on the client's socket, then the exec of the user's shell), so a Dial
// after a Run starts no worker for it: a fleet's run step then wait step
// on a port cost each host one session, not two. A Dial first still
// starts one.
func TestSSHDialAfterRunNeedsNoWorker(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	ctx := ctxFor(t, time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sessions := func() int {
		b, _ := os.ReadFile(srv.Log)
		return strings.Count(string(b), "Starting session")
	}
	dial := func(s *SSH) {
		t.Helper()
		c, err := s.Dial(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	ran := testSSH(t, srv)
	if r, err := ran.Run(ctx, Command{Line: "true"}); err != nil || r.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	dial(ran)
	if n := sessions(); n != 1 {
		t.Fatalf("a Run then a Dial opened %d sessions, want 1 (the Run's)", n)
	}
	ran.Close()

	fresh := testSSH(t, srv)
	dial(fresh)
	if n := sessions() - 1; n != 1 {
		t.Fatalf("a Dial on a new connection opened %d sessions, want 1 (the worker that turns Nagle off)", n)
	}
}
