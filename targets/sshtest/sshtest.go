package sshtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// SSHDPath is where Debian, Ubuntu and RHEL install the OpenSSH server.
const SSHDPath = "/usr/sbin/sshd"

// Server is a running sshd that accepts User with the key in UserKey.
type Server struct {
	Host       string // "127.0.0.1"
	Port       int
	User       string
	UserKey    string        // private key file (OpenSSH format, no passphrase)
	KnownHosts string        // a known_hosts file holding the host key for [Host]:Port
	HostKey    ssh.PublicKey // the ed25519 key sshd offers, the one in KnownHosts
	// OtherHostKey is sshd's second key (ECDSA), not in KnownHosts. x/crypto
	// prefers ECDSA to ed25519, so a client that does not ask for the key
	// type known_hosts holds fails to verify the host (golang/go#29286).
	OtherHostKey ssh.PublicKey
	Dir          string // the server's files (config, keys, log)
	Log          string // sshd's own log (-e output)

	cmd *exec.Cmd
}

// Addr is host:port for net.Dial.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// RequireSSHD skips the test when no sshd is installed, unless CI=true: CI
// must have it, so there the test fails instead of passing vacuously.
func RequireSSHD(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing: install openssh-server (apt-get install openssh-server)", SSHDPath)
	}
	t.Skipf("%s is missing: install openssh-server (apt-get install openssh-server)", SSHDPath)
}

// StartSSHD starts `sshd -D -e -f CONFIG -p PORT` on 127.0.0.1 as the
// current user, and stops it when the test ends. Each of extraConfig is
// a line added to sshd_config ("SetEnv SHLVL=1").
func StartSSHD(t testing.TB, extraConfig ...string) *Server {
	t.Helper()
	RequireSSHD(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Host: "127.0.0.1", User: u.Username, Dir: dir, Log: filepath.Join(dir, "sshd.log")}

	hostKey := filepath.Join(dir, "host_ed25519")
	hostPub, err := WriteKey(hostKey, "")
	if err != nil {
		t.Fatal(err)
	}
	s.HostKey = hostPub
	otherKey := filepath.Join(dir, "host_ecdsa")
	if s.OtherHostKey, err = WriteECDSAKey(otherKey); err != nil {
		t.Fatal(err)
	}
	s.UserKey = filepath.Join(dir, "user_ed25519")
	userPub, err := WriteKey(s.UserKey, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd refuses to start without its privilege separation directory,
	// which only the openssh-server service normally creates.
	if os.Geteuid() == 0 {
		_ = os.MkdirAll("/run/sshd", 0o755)
	}

	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Port = port
		if lastErr = s.start(t, hostKey, otherKey, extraConfig); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("start sshd: %v", lastErr)
	}
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(s.KnownHosts, []byte(KnownHostsLine(s.Host, s.Port, s.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// Config is the sshd_config of a test sshd: listening on each of listen
// (an address, or address:port), with the host keys hostKeys, accepting
// the keys in authorized by public key only; no PAM, so it runs without
// a system service set up.
func Config(listen, hostKeys []string, authorized string) string {
	var b strings.Builder
	for _, l := range listen {
		b.WriteString("ListenAddress " + l + "\n")
	}
	for _, k := range hostKeys {
		b.WriteString("HostKey " + k + "\n")
	}
	b.WriteString("AuthorizedKeysFile " + authorized + `
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile none
AllowTcpForwarding yes
MaxSessions 20
LogLevel VERBOSE
`)
	return b.String()
}

func (s *Server) start(t testing.TB, hostKey, otherKey string, extra []string) error {
	config := filepath.Join(s.Dir, "sshd_config")
	text := Config([]string{"127.0.0.1"}, []string{hostKey, otherKey}, filepath.Join(s.Dir, "authorized_keys"))
	for _, line := range extra {
		text += line + "\n"
	}
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		return err
	}
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", config, "-p", strconv.Itoa(s.Port))
	cmd.Stdout, cmd.Stderr = logf, logf
	// sshd -D runs until killed: should the test binary die before its
	// cleanup (a panic, -timeout), the kernel ends sshd with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()

	// Generous: on a loaded machine sshd may take a while to load its keys.
	const patience = time.Minute
	deadline := time.Now().Add(patience)
	for {
		if banner(s.Addr()) {
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(s.Log)
			return fmt.Errorf("sshd exited (%v): %s", err, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			log, _ := os.ReadFile(s.Log)
			return fmt.Errorf("sshd did not answer on %s within %s: %s", s.Addr(), patience, log)
		}
	}
	s.cmd = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			log, _ := os.ReadFile(s.Log)
			t.Logf("sshd log:\n%s", log)
		}
	})
	return nil
}

// banner reports whether an SSH server (and not some other program that
// took the port) answers on addr.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-2.0-OpenSSH")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WriteKey generates an ed25519 key, writes it to path in OpenSSH format
// (encrypted when passphrase is not empty) with mode 0600, writes the
// public half to path.pub, and returns the public key.
func WriteKey(path, passphrase string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "lockstep-test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "lockstep-test", []byte(passphrase))
	}
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		return nil, err
	}
	return sshPub, nil
}

// WriteECDSAKey writes a new P-256 private key at path, for a host's
// second host key, and returns its public half.
func WriteECDSAKey(path string) (ssh.PublicKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "lockstep-test")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(&priv.PublicKey)
}

// AuthorizeKey adds pub to the keys sshd accepts.
func (s *Server) AuthorizeKey(pub ssh.PublicKey) error {
	f, err := os.OpenFile(filepath.Join(s.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(ssh.MarshalAuthorizedKey(pub))
	return err
}

// KnownHostsLine is the known_hosts line for key at host:port, in the
// form OpenSSH writes ([host]:port unless the port is 22).
func KnownHostsLine(host string, port int, key ssh.PublicKey) string {
	h := host
	if port != 22 {
		h = fmt.Sprintf("[%s]:%d", host, port)
	}
	return h + " " + string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(key))) + "\n"
}

// Proxy forwards TCP connections to a backend and lets a test break them:
// Sever closes every connection at once (the peer sees a reset or EOF),
// Freeze stops forwarding bytes while keeping the sockets open (a cable
// pulled, a NAT entry dropped: nobody is told), Block makes every new
// connection frozen from the start (a host that vanished).
type Proxy struct {
	Addr string

	backend string
	l       net.Listener

	mu      sync.Mutex
	pairs   []*pair
	blocked bool
	accept  int
}

// pair is one forwarded connection, both of its sockets.
type pair struct {
	client, backend net.Conn
	frozen          atomic.Bool
}

// StartProxy listens on 127.0.0.1 and forwards to backend until the test ends.
func StartProxy(t testing.TB, backend string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), backend: backend, l: l}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); l.Close(); p.Sever() })
	go p.serve(ctx)
	return p
}

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.l.Addr().(*net.TCPAddr).Port }

// Accepted counts the connections the proxy has taken.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accept
}

func (p *Proxy) serve(ctx context.Context) {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		var d net.Dialer
		b, err := d.DialContext(ctx, "tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, backend: b}
		p.mu.Lock()
		p.accept++
		pr.frozen.Store(p.blocked)
		p.pairs = append(p.pairs, pr)
		p.mu.Unlock()
		go pr.pipe(b, c)
		go pr.pipe(c, b)
	}
}

func (pr *pair) pipe(dst, src net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pr.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		// Frozen, the bytes are swallowed, as a dead link would, and
		// reading goes on so neither side's writes block or fail.
		if err != nil {
			dst.Close()
			return
		}
	}
}

// Sever closes every forwarded connection now.
func (p *Proxy) Sever() {
	p.mu.Lock()
	pairs := p.pairs
	p.pairs = nil
	p.mu.Unlock()
	for _, pr := range pairs {
		pr.client.Close()
		pr.backend.Close()
	}
}

// Freeze stops forwarding on the current connections without closing
// them; connections accepted afterwards forward normally.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.pairs {
		pr.frozen.Store(true)
	}
}

// Block freezes the current connections and every new one until Unblock.
func (p *Proxy) Block() {
	p.mu.Lock()
	p.blocked = true
	p.mu.Unlock()
	p.Freeze()
}

// Unblock lets new connections through again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

// StartAgent serves an ssh-agent holding the private keys in files on a
// unix socket in the test's temp dir, and returns the socket's path (for
// SSH_AUTH_SOCK).
func StartAgent(t testing.TB, keyFiles ...string) string {
	t.Helper()
	keyring := agent.NewKeyring()
	for _, f := range keyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key, err := ssh.ParseRawPrivateKey(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := keyring.Add(agent.AddedKey{PrivateKey: key, Comment: f}); err != nil {
			t.Fatal(err)
		}
	}
	// Unix socket paths are short (108 bytes): not under t.TempDir's long name.
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = agent.ServeAgent(keyring, c)
			}()
		}
	}()
	return sock
}
