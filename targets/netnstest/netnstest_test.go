package netnstest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestFleet(t *testing.T) {
	f := Start(t, Options{Hosts: 8})
	ctx := ctxFor(t, 2*time.Minute)
	if len(f.Hosts) != 8 {
		t.Fatalf("%d hosts, want 8", len(f.Hosts))
	}
	seen := map[string]bool{}
	for i, h := range f.Hosts {
		if h.Name != "n"+strconv.Itoa(i+1) || h.Rank != i || !f.Subnet.Contains(h.Addr) || h.Addr == f.Gateway || seen[h.Addr.String()] {
			t.Errorf("host %d: %s rank %d at %s, in %s (gateway %s)", i, h.Name, h.Rank, h.Addr, f.Subnet, f.Gateway)
		}
		seen[h.Addr.String()] = true
	}

	for _, h := range f.Hosts {
		out, err := h.Exec(ctx, "ip", "-br", "-4", "addr", "show", "eth0")
		if err != nil || !strings.Contains(string(out), h.Addr.String()+"/24") {
			t.Errorf("%s: eth0 is %q (%v), want %s/24", h.Name, out, err, h.Addr)
		}
		pids, err := h.Processes()
		if err != nil || len(pids) != 1 || pids[0] != h.SSHDPid() {
			t.Errorf("%s: processes on the host %v (%v), want its sshd alone (%d)", h.Name, pids, err, h.SSHDPid())
		}
	}

	t.Run("each host has its own /tmp", func(t *testing.T) {
		n1, n2 := f.Hosts[0], f.Hosts[1]
		if err := os.WriteFile(filepath.Join(n1.Tmp, "who"), []byte("n1"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := n1.Exec(ctx, "cat", "/tmp/who"); err != nil || string(out) != "n1" {
			t.Errorf("n1's /tmp/who: %q, %v", out, err)
		}
		if out, err := n2.Exec(ctx, "ls", "-A", "/tmp"); err != nil || len(out) != 0 {
			t.Errorf("n2's /tmp holds %q (%v), want it empty", out, err)
		}
	})

	t.Run("hosts reach each other", func(t *testing.T) {
		// --dist-init-addr n1:5000 from every other rank needs this.
		out, err := f.Hosts[7].Exec(ctx, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d && head -c 8 <&3", f.Hosts[0].Addr, SSHPort))
		if err != nil || string(out) != "SSH-2.0-" {
			t.Errorf("n8 to n1's sshd: %q, %v", out, err)
		}
	})

	t.Run("OpenSSH reaches each host by name with its key verified", func(t *testing.T) {
		if _, err := exec.LookPath("ssh"); err != nil && os.Getenv("CI") != "true" {
			t.Skip("no ssh client: apt-get install openssh-client")
		}
		var wg sync.WaitGroup
		for _, h := range f.Hosts {
			wg.Go(func() {
				out, err := exec.CommandContext(ctx, "ssh", "-F", f.SSHConfig, h.Name, "ip -br -4 addr show eth0").CombinedOutput()
				if err != nil || !strings.Contains(string(out), h.Addr.String()+"/24") {
					t.Errorf("ssh %s: %q, %v", h.Name, out, err)
				}
			})
		}
		wg.Wait()
		// n2's address under n1's name: its key is not the one recorded.
		cfg := filepath.Join(t.TempDir(), "config")
		b, _ := os.ReadFile(f.SSHConfig)
		text := strings.Replace(string(b), "HostName "+f.Hosts[0].Addr.String()+"\n", "HostName "+f.Hosts[0].Addr.String()+"\n\tHostKeyAlias "+f.Hosts[1].Addr.String()+"\n", 1)
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, "ssh", "-F", cfg, "n1", "true").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "HOST IDENTIFICATION HAS CHANGED") {
			t.Errorf("ssh to n1 checked against n2's key: %q, %v; want the host key refused", out, err)
		}
	})

	t.Run("cut off and back", func(t *testing.T) {
		h := f.Hosts[2]
		if err := h.LinkDown(ctx); err != nil {
			t.Fatal(err)
		}
		// The link is down: the host cannot send a frame, to anyone.
		out, err := h.Exec(ctx, "ip", "-br", "link", "show", "eth0")
		if err != nil || !strings.Contains(string(out), "NO-CARRIER") {
			t.Errorf("n3's eth0 after LinkDown: %q, %v", out, err)
		}
		if err := h.LinkUp(ctx); err != nil {
			t.Fatal(err)
		}
		if err := banner(ctx, fmt.Sprintf("%s:%d", h.Addr, SSHPort)); err != nil {
			t.Errorf("n3 after LinkUp: %v", err)
		}
	})

	t.Run("sshd stopped and started", func(t *testing.T) {
		h := f.Hosts[3]
		if err := h.StopSSHD(); err != nil {
			t.Fatal(err)
		}
		if err := banner(ctx, fmt.Sprintf("%s:%d", h.Addr, SSHPort)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("n4 with sshd stopped: %v, want the connection refused", err)
		}
		if err := h.StartSSHD(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// gone tells whether pid has exited (gone from /proc, or a zombie nobody
// reaped yet).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

func TestCloseLeavesNothing(t *testing.T) {
	Require(t)
	ctx := ctxFor(t, 2*time.Minute)
	f, err := New(ctx, Options{Hosts: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// What a host runs: a daemon that left its session, and an ssh
	// session still open (sshd-session and its shell).
	out, err := f.Hosts[0].Exec(ctx, "sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	session := exec.Command("ssh", "-F", f.SSHConfig, "n2", "echo open; exec sleep 1000")
	stdout, _ := session.StdoutPipe()
	if err := session.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "open\n" {
		t.Fatalf("ssh session: %q, %v", line, err)
	}
	var sshds []int
	for _, h := range f.Hosts {
		sshds = append(sshds, h.SSHDPid())
	}
	names := []string{f.Bridge}
	for _, h := range f.Hosts {
		names = append(names, h.Namespace, h.Link)
	}

	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := f.Leftovers(); len(left) > 0 {
		t.Errorf("after Close: %v", left)
	}
	for _, pid := range append(sshds, daemon) {
		if !gone(pid) {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	// The client sees its connection end rather than hang.
	if err := session.Wait(); err == nil {
		t.Errorf("the ssh session to n2 ended well after its host was torn down")
	}
	// As ip shows them: none of the names is left.
	nss, _ := exec.Command("ip", "netns", "list").Output()
	ls, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, n := range names {
		if strings.Contains(string(nss), n+" ") || strings.Contains(string(nss), n+"\n") || strings.Contains(string(ls), " "+n+":") || strings.Contains(string(ls), " "+n+"@") {
			t.Errorf("%s is still listed by ip", n)
		}
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestChildFleet is the process TestInterruptedChild and TestKilledChild
// start: it makes a fleet, says its ID, and waits to be signalled.
func TestChildFleet(t *testing.T) {
	if os.Getenv("NETNSTEST_CHILD") != "fleet" {
		return
	}
	f, err := New(context.Background(), Options{Hosts: 3})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("fleet %d\n", f.ID)
	select {}
}

// child starts TestChildFleet and returns it with its fleet's ID.
func child(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildFleet$", "-test.v=false")
	cmd.Env = append(os.Environ(), "NETNSTEST_CHILD=fleet")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var id int
	if _, serr := fmt.Sscanf(line, "fleet %d", &id); err != nil || serr != nil {
		t.Fatalf("child said %q (%v)", line, err)
	}
	t.Cleanup(func() {
		if left := Leftovers(id); len(left) > 0 {
			_ = teardown(id, nil)
		}
	})
	return cmd, id
}

func TestInterruptedChild(t *testing.T) {
	Require(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, id := child(t)
			if len(Leftovers(id)) == 0 {
				t.Fatalf("fleet %d of the child not found", id)
			}
			_ = cmd.Process.Signal(sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != sig {
				t.Errorf("child ended with %v, want it killed by %v after its cleanup", err, sig)
			}
			if left := Leftovers(id); len(left) > 0 {
				t.Errorf("after %v, the child's fleet left: %v", sig, left)
			}
		})
	}
}

func TestKilledChild(t *testing.T) {
	Require(t)
	cmd, id := child(t)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// SIGKILL skips every cleanup: the namespaces stay until a sweep.
	if left := Leftovers(id); len(left) == 0 {
		t.Fatalf("fleet %d: nothing left after SIGKILL; the test proves nothing", id)
	}
	if err := Sweep(); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if left := Leftovers(id); len(left) > 0 {
		t.Errorf("after Sweep: %v", left)
	}
}

// TestChildRequire is the process TestRequire starts, without ip in its
// PATH.
func TestChildRequire(t *testing.T) {
	if os.Getenv("NETNSTEST_CHILD") != "require" {
		return
	}
	Require(t)
	t.Fatal("Require returned without ip in PATH")
}

func TestRequire(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChildRequire$", "-test.v")
			cmd.Env = []string{"NETNSTEST_CHILD=require", "PATH=" + t.TempDir(), "CI=" + ci}
			out, err := cmd.CombinedOutput()
			// Not root, the first reason given is that one.
			if os.Geteuid() == 0 && !strings.Contains(string(out), "no ip command: apt-get install iproute2") {
				t.Errorf("output does not say why: %s", out)
			}
			skipped := strings.Contains(string(out), "--- SKIP: TestChildRequire")
			switch {
			case ci == "true" && (err == nil || skipped):
				t.Errorf("under CI=true: %v, skipped %v; want a failure:\n%s", err, skipped, out)
			case ci == "" && (err != nil || !skipped):
				t.Errorf("without CI: %v, skipped %v; want a skip:\n%s", err, skipped, out)
			}
		})
	}
}
