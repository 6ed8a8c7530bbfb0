package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lockstep/targets/netnstest"
	"lockstep/targets/sshtest"
)

// fleetSSH is the SSH target for host name of f, resolved by name through
// the fleet's ssh_config as ssh -G resolves it, with no ssh-agent.
func fleetSSH(t *testing.T, f *netnstest.Fleet, name string) (*SSH, SSHConfig) {
	t.Helper()
	r := defaultResolver()
	r.configFile = f.SSHConfig
	cfg, res, err := r.resolve(t.Context(), name, SSHConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ssh != "" && res.Method != ResolvedBySSH {
		t.Errorf("%s resolved %s", name, res)
	}
	s := newSSH(name, cfg, r)
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

// TestSSHFleet drives the SSH target against eight hosts in network
// namespaces (targets/netnstest), each with its own sshd and host key.
func TestSSHFleet(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	f := netnstest.Start(t, netnstest.Options{Hosts: 8})
	ctx := ctxFor(t, 3*time.Minute)
	targets := map[string]*SSH{}
	for _, h := range f.Hosts {
		s, cfg := fleetSSH(t, f, h.Name)
		if cfg.Host != h.Addr.String() || cfg.Port != netnstest.SSHPort || cfg.User != f.User ||
			len(cfg.KnownHosts) == 0 || cfg.KnownHosts[0] != f.KnownHosts ||
			cfg.KeepaliveInterval != f.KeepaliveInterval || cfg.KeepaliveMax != f.KeepaliveMax {
			t.Errorf("%s resolved to %+v", h.Name, cfg)
		}
		targets[h.Name] = s
	}

	t.Run("each host by name, at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, h := range f.Hosts {
			wg.Go(func() {
				// The host's own address proves which host answered.
				r, err := targets[h.Name].Run(ctx, Command{Line: "ip -br -4 addr show eth0"})
				if err != nil || r.ExitCode != 0 || !strings.Contains(string(r.Stdout), h.Addr.String()+"/24") {
					t.Errorf("%s: %+v, %v", h.Name, r, err)
				}
			})
		}
		wg.Wait()
	})

	t.Run("the config file alone resolves the same", func(t *testing.T) {
		r := defaultResolver()
		r.ssh, r.configFile = "", f.SSHConfig
		cfg, _, err := r.resolve(ctx, "n2", SSHConfig{})
		want := targets["n2"].Config()
		if err != nil || cfg.Host != want.Host || cfg.Port != want.Port || cfg.IdentityFiles[0] != want.IdentityFiles[0] || cfg.KnownHosts[0] != want.KnownHosts[0] {
			t.Errorf("without ssh: %+v, %v; with ssh -G: %+v", cfg, err, want)
		}
	})

	t.Run("a host offering another host's key is refused", func(t *testing.T) {
		n1, n2 := f.Hosts[0], f.Hosts[1]
		known := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(known, []byte(sshtest.KnownHostsLine(n1.Addr.String(), netnstest.SSHPort, n2.HostKey)), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := targets["n1"].Config()
		cfg.KnownHosts = []string{known}
		s := NewSSH("n1", cfg)
		defer s.Close()
		_, err := s.Run(ctx, Command{Line: "true"})
		var hk *HostKeyError
		if !errors.As(err, &hk) || !hk.Changed {
			t.Fatalf("Run = %v, want a HostKeyError for a changed key", err)
		}
	})

	t.Run("a host cut off fails within the keepalive window", func(t *testing.T) {
		h := f.Host("n3")
		s := targets["n3"]
		cfg := s.Config()
		// ssh_conn.go keepalive: a request every interval; the connection
		// ends when max intervals pass without its reply.
		window := time.Duration(cfg.KeepaliveMax) * cfg.KeepaliveInterval
		if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
			t.Fatal(err)
		}
		ready := filepath.Join(h.Tmp, "ready")
		if err := syscall.Mkfifo(ready, 0o600); err != nil {
			t.Fatal(err)
		}
		type result struct {
			r   Result
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := s.Run(ctx, Command{Line: "echo up > /tmp/ready; exec sleep 600"})
			done <- result{r, err}
		}()
		// Opening the fifo returns once the command opened it: it runs.
		opened := make(chan error, 1)
		go func() {
			b, err := os.ReadFile(ready)
			if err == nil && string(b) != "up\n" {
				err = fmt.Errorf("read %q", b)
			}
			opened <- err
		}()
		select {
		case err := <-opened:
			if err != nil {
				t.Fatal(err)
			}
		case res := <-done:
			w, _ := os.OpenFile(ready, os.O_WRONLY, 0) // frees the reader
			w.Close()
			t.Fatalf("the command ended before it said it runs: %+v, %v", res.r, res.err)
		}

		if err := h.LinkDown(ctx); err != nil {
			t.Fatal(err)
		}
		cut := time.Now()
		res := <-done
		took := time.Since(cut)
		// ctx is far longer than the window: an error that is not the
		// keepalive's would be the context's, or a command that ended.
		if !errors.Is(res.err, ErrDisconnected) || !strings.Contains(res.err.Error(), "no reply to keepalives") {
			t.Fatalf("Run on a host cut off = %+v, %v; want ErrDisconnected from the keepalives", res.r, res.err)
		}
		t.Logf("n3 cut off: Run failed after %s (keepalive window %s, at most one interval more): %v", took.Round(time.Millisecond), window, res.err)

		// The others go on meanwhile.
		if r, err := targets["n4"].Run(ctx, Command{Line: "echo n4"}); err != nil || string(r.Stdout) != "n4\n" {
			t.Errorf("n4 while n3 is cut off: %+v, %v", r, err)
		}
		if err := h.LinkUp(ctx); err != nil {
			t.Fatal(err)
		}
		// Back up, the next call reconnects; the command left on the host
		// by the lost session is still there (fleet teardown ends it).
		r, err := s.Run(ctx, Command{Line: "pgrep -fx 'sleep 600' >/dev/null && echo back"})
		if err != nil || string(r.Stdout) != "back\n" {
			t.Errorf("n3 after LinkUp: %+v, %v", r, err)
		}
	})

	t.Run("a host whose sshd is stopped", func(t *testing.T) {
		h := f.Host("n5")
		s := targets["n5"]
		if _, err := s.Run(ctx, Command{Line: "true"}); err != nil {
			t.Fatal(err)
		}
		if err := h.StopSSHD(); err != nil {
			t.Fatal(err)
		}
		// As with systemctl stop ssh: the open connection goes on...
		if r, err := s.Run(ctx, Command{Line: "echo still"}); err != nil || string(r.Stdout) != "still\n" {
			t.Errorf("the open connection after sshd stopped: %+v, %v", r, err)
		}
		// ...and a new one is refused at once.
		fresh := NewSSH("n5", s.Config())
		defer fresh.Close()
		_, err := fresh.Run(ctx, Command{Line: "true"})
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("a new connection to n5 with sshd stopped: %v, want it refused", err)
		}
		if err := h.StartSSHD(ctx); err != nil {
			t.Fatal(err)
		}
		if r, err := fresh.Run(ctx, Command{Line: "echo again"}); err != nil || string(r.Stdout) != "again\n" {
			t.Errorf("n5 after sshd started again: %+v, %v", r, err)
		}
	})
}
