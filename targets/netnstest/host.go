package netnstest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lockstep/targets/sshtest"
)

// hostScript runs a command as on the host: in a mount namespace of its
// own (ip netns exec makes one), with the host's /tmp bound over /tmp
// and the hidden files bound to an empty one. Paths come as arguments,
// never in the script's text.
const hostScript = `tmp=$1 empty=$2 n=$3
shift 3
mount --bind "$tmp" /tmp || exit 125
while [ "$n" -gt 0 ]; do
	mount --bind "$empty" "$1" || exit 125
	shift
	n=$((n - 1))
done
exec "$@"`

// Command is the command name args as run on the host: in its network
// namespace, seeing its /tmp. Like exec.CommandContext, it is not started.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := []string{"netns", "exec", h.Namespace, "/bin/sh", "-c", hostScript, "sh",
		h.Tmp, h.fleet.empty, strconv.Itoa(len(h.fleet.hide))}
	argv = append(argv, h.fleet.hide...)
	argv = append(argv, name)
	argv = append(argv, args...)
	return exec.CommandContext(ctx, "ip", argv...)
}

// Exec runs name args on the host to completion and returns its combined
// output; a non-zero exit is an error that includes the output.
func (h *Host) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := h.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %s %s: %w: %s", h.Name, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// LinkDown cuts the host off: its link is set down on the test's side
// (the bridge port goes dark), so nothing reaches the host or leaves it,
// and nobody is told: no reset, no ICMP. A connection to it hangs until
// a keepalive or a timeout gives up, as when a cable is pulled. Processes
// on the host go on.
func (h *Host) LinkDown(ctx context.Context) error { return h.setLink(ctx, "down") }

// LinkUp undoes LinkDown; connections that were not given up resume.
func (h *Host) LinkUp(ctx context.Context) error { return h.setLink(ctx, "up") }

func (h *Host) setLink(ctx context.Context, state string) error {
	out, err := exec.CommandContext(ctx, "ip", "link", "set", h.Link, state).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: ip link set %s %s: %w: %s", h.Name, h.Link, state, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StopSSHD stops the host's sshd listener (SIGTERM, as `systemctl stop
// ssh` does with OpenSSH's unit, KillMode=process): new connections are
// refused, connections already open and what runs in them go on.
func (h *Host) StopSSHD() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sshd == nil {
		return nil
	}
	if err := h.sshd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("%s: stop sshd: %w", h.Name, err)
	}
	<-h.sshd.exited
	h.sshd = nil
	return nil
}

// StartSSHD starts the host's sshd (again, after StopSSHD), and returns
// once it answers on the host's address from the test's side. sshd is
// killed should this process die without its cleanup.
func (h *Host) StartSSHD(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sshd != nil {
		return nil
	}
	logf, err := os.OpenFile(h.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return err
	}
	// Not CommandContext: sshd outlives this call; Close kills it.
	cmd := h.Command(context.Background(), sshtest.SSHDPath, "-D", "-e", "-f", h.config)
	cmd.Stdout, cmd.Stderr = w, w
	// ip netns exec and sh exec into sshd: one pid, which keeps the
	// parent-death signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		logf.Close()
		return fmt.Errorf("%s: start sshd: %w", h.Name, err)
	}
	w.Close()
	// sshd says when it listens: "Server listening on 10.240.3.2 port 22."
	listening := make(chan struct{})
	want := fmt.Sprintf("Server listening on %s port %d", h.Addr, SSHPort)
	go func() {
		defer logf.Close()
		defer r.Close()
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !seen && strings.Contains(sc.Text(), want) {
				seen = true
				close(listening)
			}
		}
		_, _ = io.Copy(logf, r)
	}()
	s := &sshd{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()

	fail := func(err error) error {
		_ = cmd.Process.Kill()
		<-s.exited
		log, _ := os.ReadFile(h.Log)
		return fmt.Errorf("%s: sshd %w: %s", h.Name, err, tail(log, 2048))
	}
	select {
	case <-listening:
	case <-s.exited:
		return fail(fmt.Errorf("exited (%v)", cmd.ProcessState))
	case <-ctx.Done():
		return fail(fmt.Errorf("did not listen on %s: %w", h.Addr, ctx.Err()))
	}
	// Listening inside the namespace; answering across the bridge is what
	// the fleet is for.
	if err := banner(ctx, netip.AddrPortFrom(h.Addr, SSHPort).String()); err != nil {
		return fail(fmt.Errorf("does not answer from the test's side: %w", err))
	}
	h.sshd = s
	return nil
}

// SSHDPid is the pid of the host's sshd listener, 0 when stopped.
func (h *Host) SSHDPid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sshd == nil {
		return 0
	}
	return h.sshd.cmd.Process.Pid
}

// Processes lists the pids of the processes on the host: those in its
// network namespace.
func (h *Host) Processes() ([]int, error) { return inNamespaces([]uint64{h.inode}) }

// banner checks that an OpenSSH server (and not some other program)
// answers on addr.
func banner(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-2.0-OpenSSH") {
		return errors.New("not an OpenSSH server: " + strings.TrimSpace(line))
	}
	return nil
}
