package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"
)

// HostKeyError is an SSH server whose host key is not the one known_hosts
// records for it (Changed), or that known_hosts does not list at all. The
// connection stops at the key exchange: nothing is sent to the host.
type HostKeyError struct {
	Host        string // as known_hosts names it: "host" or "[host]:port"
	Port        int
	KeyType     string // the key the server offered: "ssh-ed25519"
	Fingerprint string // "SHA256:..."
	Changed     bool
	KnownAt     []string // "file:line" of the recorded keys (Changed only)
	KnownHosts  []string // the files consulted
}

func (e *HostKeyError) Error() string {
	host, _, _ := strings.Cut(strings.TrimPrefix(e.Host, "["), "]")
	scan := "ssh-keyscan "
	if e.Port != 22 {
		scan += "-p " + strconv.Itoa(e.Port) + " "
	}
	file := firstOr(e.KnownHosts, "~/.ssh/known_hosts")
	if e.Changed {
		// The old key is removed from the file that records it (the
		// plan's own known_hosts, often), not from ~/.ssh/known_hosts,
		// which is all a bare ssh-keygen -R edits.
		if len(e.KnownAt) > 0 {
			at := e.KnownAt[0]
			file = at[:strings.LastIndexByte(at, ':')]
		}
		scan += host + " >> " + shellWord(file)
		return fmt.Sprintf("HOST KEY CHANGED for %s: it offered %s %s, but %s records a different key; "+
			"someone may be intercepting the connection (nothing was sent). "+
			"If the host was reinstalled, check the new fingerprint out of band, then: ssh-keygen -f %s -R %s && %s",
			e.Host, e.KeyType, e.Fingerprint, strings.Join(e.KnownAt, ", "), shellWord(file), shellWord(e.Host), scan)
	}
	scan += host + " >> " + shellWord(file)
	return fmt.Sprintf("host key of %s is unknown: it offered %s %s, which is not in %s (nothing was sent). "+
		"If that is the host's fingerprint, add it with: %s",
		e.Host, e.KeyType, e.Fingerprint, orNone(e.KnownHosts), scan)
}

// AuthError is a server that accepted none of the credentials lockstep had.
type AuthError struct {
	Addr  string // user@host:port
	Tried []string
	Err   error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authentication as %s failed; tried: %s (%v)", e.Addr, strings.Join(e.Tried, "; "), e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// shellWord is s as one word for a command the user copies: as it is
// when nothing in it is special to the shell, else quoted ([host]:port
// is a glob). A leading ~/ stays unquoted, to mean the home.
func shellWord(s string) string {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		return "~/" + shellWord(rest)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@,+=%", r)) {
			return shellQuote(s)
		}
	}
	return s
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "any known_hosts file (none exists)"
	}
	return strings.Join(s, ", ")
}

// sshConn is one live connection: the client and the jump hosts it runs
// through. done closes when it ends, for whatever reason.
type sshConn struct {
	client  *ssh.Client
	hops    []*ssh.Client
	workers *workerPool
	nodelay sync.Once
	acks    *quickAckConn // nil through a jump host
	// commandRan: a session ran a command (Run's), so sshd has turned
	// Nagle off already (quickAcks).
	commandRan atomic.Bool
	// watcher is the connection's file watcher (ssh_watch.go), started
	// by the first watch.
	watchMu   sync.Mutex
	watcher   *watchSession
	watchErr  error // why the host cannot watch: not tried again
	watchWarm sync.Once

	// kills are the killGroup calls of cancelled calls, and the ends of
	// workers whose start was given up (releaseWorker), still going: the
	// target's Close waits for them, so the kill script a cancelled
	// call left does not outlive lockstep on the host.
	kills sync.WaitGroup

	done      chan struct{}
	closeOnce sync.Once
	cause     error // why it ended; set before done closes
}

func newSSHConn(client *ssh.Client, hops []*ssh.Client) *sshConn {
	c := &sshConn{client: client, hops: hops, workers: newWorkerPool(), done: make(chan struct{})}
	go func() {
		err := client.Wait()
		if err == nil {
			err = errors.New("closed by the server")
		}
		c.end(err)
	}()
	return c
}

// end closes the connection (and its hops) and records why.
func (c *sshConn) end(cause error) {
	c.closeOnce.Do(func() {
		c.cause = cause
		close(c.done)
		c.client.Close()
		for i := len(c.hops) - 1; i >= 0; i-- {
			c.hops[i].Close()
		}
	})
}

func (c *sshConn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// lost tells whether a failed call failed because the connection ended.
// A channel can report its failure a moment before the transport does, so
// it waits briefly for the verdict.
func (c *sshConn) lost() bool {
	select {
	case <-c.done:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// keepalive sends keepalive@openssh.com every interval, as OpenSSH's
// ServerAliveInterval; after max intervals without a reply the connection
// is closed, so calls in flight fail as disconnected instead of hanging on
// a link that silently died. Any reply counts (OpenSSH answers "failure").
func (c *sshConn) keepalive(interval time.Duration, max int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	replies := make(chan error, 1)
	pending, missed := false, 0
	for {
		select {
		case <-c.done:
			return
		case err := <-replies:
			pending, missed = false, 0
			if err != nil {
				c.end(fmt.Errorf("keepalive: %w", err))
				return
			}
		case <-t.C:
			if pending {
				// x/crypto sends one global request at a time, so a
				// second would only queue behind the first.
				missed++
				if missed >= max {
					c.end(fmt.Errorf("no reply to keepalives for %s (%d × %s)", time.Duration(missed)*interval, missed, interval))
					return
				}
				continue
			}
			pending = true
			go func() {
				_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
				replies <- err
			}()
		}
	}
}

// dial opens a connection to the target through its jump hosts.
func (s *SSH) dial(ctx context.Context) (*sshConn, error) {
	hops, err := s.jumpHosts(ctx)
	if err != nil {
		return nil, err
	}
	var clients []*ssh.Client
	var first *quickAckConn // the TCP connection, to the first hop
	closeAll := func() {
		for i := len(clients) - 1; i >= 0; i-- {
			clients[i].Close()
		}
	}
	for _, hop := range append(hops, s.cfg) {
		var prev *ssh.Client
		if len(clients) > 0 {
			prev = clients[len(clients)-1]
		}
		c, acks, err := s.dialOne(ctx, prev, hop)
		if first == nil {
			first = acks
		}
		if err != nil {
			closeAll()
			if len(clients) > 0 {
				return nil, fmt.Errorf("via %s: %w", hopsString(hops[:len(clients)]), err)
			}
			return nil, err
		}
		clients = append(clients, c)
	}
	final := clients[len(clients)-1]
	conn := newSSHConn(final, clients[:len(clients)-1])
	if len(hops) == 0 {
		// The host's own sshd is at the other end: once it has run a
		// command it sends at once, and the ACKs may wait again. A jump
		// host's sshd never runs one of ours: its ACKs stay quick.
		conn.acks = first
	}
	if s.cfg.KeepaliveInterval > 0 {
		go conn.keepalive(s.cfg.KeepaliveInterval, s.cfg.KeepaliveMax)
	}
	return conn, nil
}

func hopsString(hops []SSHConfig) string {
	var names []string
	for _, h := range hops {
		names = append(names, sshAddr(h))
	}
	return strings.Join(names, " -> ")
}

func sshAddr(c SSHConfig) string {
	return c.User + "@" + net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// jumpHosts resolves each hop of ProxyJump through the ssh configuration,
// as ssh -J does. A hop also gets the target's identity files, known_hosts
// files and passphrase: a plan naming a key means it for the whole way.
func (s *SSH) jumpHosts(ctx context.Context) ([]SSHConfig, error) {
	if s.cfg.ProxyJump == "" || s.cfg.ProxyJump == "none" {
		return nil, nil
	}
	var hops []SSHConfig
	for _, spec := range strings.Split(s.cfg.ProxyJump, ",") {
		spec = strings.TrimSpace(spec)
		ep, err := parseEndpoint(spec)
		if err != nil {
			return nil, fmt.Errorf("proxy jump %q: %w", s.cfg.ProxyJump, err)
		}
		hop, _, err := s.resolver.resolve(ctx, s.name, SSHConfig{Host: ep.host, User: ep.user, Port: ep.port})
		if err != nil {
			return nil, fmt.Errorf("proxy jump %s: %w", spec, err)
		}
		hop.ProxyJump = ""
		hop.IdentityFiles = appendNew(s.cfg.IdentityFiles, hop.IdentityFiles...)
		hop.KnownHosts = appendNew(s.cfg.KnownHosts, hop.KnownHosts...)
		hop.PassphraseEnv = s.cfg.PassphraseEnv
		hop.InsecureIgnoreHostKey = s.cfg.InsecureIgnoreHostKey
		hop.ConnectTimeout = s.cfg.ConnectTimeout
		hops = append(hops, withDefaults(hop, s.resolver))
	}
	return hops, nil
}

func appendNew(base []string, more ...string) []string {
	out := append([]string(nil), base...)
	for _, m := range more {
		dup := false
		for _, o := range out {
			dup = dup || o == m
		}
		if !dup {
			out = append(out, m)
		}
	}
	return out
}

// dialOne connects to cfg's host, over TCP or through prev, and completes
// the handshake within the connect timeout.
func (s *SSH) dialOne(ctx context.Context, prev *ssh.Client, cfg SSHConfig) (*ssh.Client, *quickAckConn, error) {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	// Keys are read (and decrypted: an encrypted key's KDF takes seconds on
	// a busy machine) before the connect timeout starts: it bounds the
	// network, not the work done here.
	cc, tried, release, err := s.clientConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()

	var nc net.Conn
	if prev == nil {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = prev.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addr, timeoutErr(ctx, cfg.ConnectTimeout, err))
	}
	var acks *quickAckConn
	if tc, ok := nc.(*net.TCPConn); ok {
		acks = newQuickAckConn(tc)
		nc = acks
	}

	// The handshake has no context of its own: closing the socket is how
	// a timeout or a cancellation interrupts it.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	conn, chans, reqs, err := ssh.NewClientConn(nc, addr, cc)
	stop()
	if err != nil {
		nc.Close()
		var hk *HostKeyError
		switch {
		case errors.As(err, &hk):
			return nil, nil, hk
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, nil, &AuthError{Addr: sshAddr(cfg), Tried: tried.list(), Err: err}
		}
		return nil, nil, fmt.Errorf("ssh handshake with %s: %w", addr, timeoutErr(ctx, cfg.ConnectTimeout, err))
	}
	return ssh.NewClient(conn, chans, reqs), acks, nil
}

func timeoutErr(ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s (connect_timeout): %w", timeout, err)
	}
	return err
}

// authTried records what authentication had to offer, for the error that
// lists it when the server accepts none.
type authTried struct {
	agent     string
	offered   []string
	missing   []string
	encrypted []string
	broken    []string
}

func (t authTried) list() []string {
	out := []string{t.agent}
	if len(t.offered) > 0 {
		out = append(out, "keys offered: "+strings.Join(t.offered, ", "))
	}
	if len(t.encrypted) > 0 {
		out = append(out, "encrypted keys not usable: "+strings.Join(t.encrypted, ", "))
	}
	if len(t.broken) > 0 {
		out = append(out, "unreadable: "+strings.Join(t.broken, ", "))
	}
	if len(t.missing) > 0 {
		out = append(out, "not found: "+strings.Join(t.missing, ", "))
	}
	return out
}

// agentTried names the agent's keys by type and fingerprint, as
// ssh-add -l does, so a user can tell which key the server should have
// accepted.
func agentTried(sock string, signers []ssh.Signer) string {
	if len(signers) == 0 {
		return fmt.Sprintf("agent (%s): no keys", sock)
	}
	var keys []string
	for _, sg := range signers {
		keys = append(keys, sg.PublicKey().Type()+" "+ssh.FingerprintSHA256(sg.PublicKey()))
	}
	return fmt.Sprintf("agent (%s): %d keys: %s", sock, len(signers), strings.Join(keys, ", "))
}

// clientConfig builds the credentials and host key check for cfg.
// release closes the agent connection once the handshake is over.
func (s *SSH) clientConfig(cfg SSHConfig) (cc *ssh.ClientConfig, tried authTried, release func(), err error) {
	release = func() {}
	var signers []ssh.Signer

	// Identity files first: a plan that names a key means that key, and an
	// agent with many keys can exhaust the server's MaxAuthTries.
	for _, f := range cfg.IdentityFiles {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			tried.missing = append(tried.missing, f)
			continue
		}
		if err != nil {
			tried.broken = append(tried.broken, fmt.Sprintf("%s (%v)", f, err))
			continue
		}
		signer, err := ssh.ParsePrivateKey(b)
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			pass := ""
			if cfg.PassphraseEnv != "" {
				pass = os.Getenv(cfg.PassphraseEnv)
			}
			switch {
			case cfg.PassphraseEnv == "":
				tried.encrypted = append(tried.encrypted, f+" (encrypted; set passphrase_env to the variable holding its passphrase)")
				continue
			case pass == "":
				tried.encrypted = append(tried.encrypted, fmt.Sprintf("%s (encrypted; $%s is empty or unset)", f, cfg.PassphraseEnv))
				continue
			}
			signer, err = ssh.ParsePrivateKeyWithPassphrase(b, []byte(pass))
			if err != nil {
				tried.encrypted = append(tried.encrypted, fmt.Sprintf("%s (the passphrase in $%s does not decrypt it: %v)", f, cfg.PassphraseEnv, err))
				continue
			}
		}
		if err != nil {
			tried.broken = append(tried.broken, fmt.Sprintf("%s (%v)", f, err))
			continue
		}
		signers = append(signers, signer)
		tried.offered = append(tried.offered, fmt.Sprintf("%s (%s %s)", f, signer.PublicKey().Type(), ssh.FingerprintSHA256(signer.PublicKey())))
	}

	sock := os.Getenv("SSH_AUTH_SOCK")
	switch {
	case sock == "":
		tried.agent = "agent: not running (SSH_AUTH_SOCK unset)"
	default:
		ac, err := net.DialTimeout("unix", sock, 2*time.Second)
		if err != nil {
			tried.agent = fmt.Sprintf("agent: %s unreachable (%v)", sock, err)
			break
		}
		// The agent connection serves this handshake only; signing
		// happens during it.
		agentSigners, err := agent.NewClient(ac).Signers()
		if err != nil {
			ac.Close()
			tried.agent = fmt.Sprintf("agent: %v", err)
			break
		}
		tried.agent = agentTried(sock, agentSigners)
		signers = append(signers, agentSigners...)
		release = func() { ac.Close() }
	}

	cc = &ssh.ClientConfig{
		User: cfg.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signers...)},
	}
	if cfg.InsecureIgnoreHostKey {
		cc.HostKeyCallback = ssh.InsecureIgnoreHostKey()
		return cc, tried, release, nil
	}
	cb, algos, err := hostKeyCheck(cfg)
	if err != nil {
		release()
		return nil, tried, func() {}, err
	}
	cc.HostKeyCallback = cb
	cc.HostKeyAlgorithms = algos
	return cc, tried, release, nil
}

// hostKeyCheck verifies the server's key against known_hosts. It also
// returns the key types known_hosts holds for the host, so the server is
// asked for a key we can check rather than its favourite (golang/go#29286).
func hostKeyCheck(cfg SSHConfig) (ssh.HostKeyCallback, []string, error) {
	var files []string
	for _, f := range cfg.KnownHosts {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	hostport := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	known := knownhosts.Normalize(hostport)
	fail := func(key ssh.PublicKey, changed bool, at []string) error {
		return &HostKeyError{Host: known, Port: cfg.Port, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key),
			Changed: changed, KnownAt: at, KnownHosts: userFiles(cfg.KnownHosts, files)}
	}
	if len(files) == 0 {
		return func(_ string, _ net.Addr, key ssh.PublicKey) error { return fail(key, false, nil) }, openSSHHostKeyOrder, nil
	}
	db, err := knownHostsDB(files)
	if err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	inner := db.HostKeyCallback()
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := inner(hostname, remote, key)
		if err == nil {
			return nil
		}
		var ke *xknownhosts.KeyError
		if errors.As(err, &ke) {
			var at []string
			for _, w := range ke.Want {
				at = append(at, fmt.Sprintf("%s:%d", w.Filename, w.Line))
			}
			return fail(key, len(ke.Want) > 0, at)
		}
		return err
	}
	algos := db.HostKeyAlgorithms(hostport)
	if len(algos) == 0 {
		// Unknown host: ask for the key OpenSSH would, so the fingerprint
		// in the error is the one ssh and ssh-keyscan show first.
		algos = openSSHHostKeyOrder
	}
	return cb, algos, nil
}

// openSSHHostKeyOrder is OpenSSH's preference among the plain key types.
var openSSHHostKeyOrder = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
}

// userFiles lists the known_hosts files to name in a message: the ones
// that exist, else the first configured (where ssh-keyscan should write).
func userFiles(configured, existing []string) []string {
	if len(existing) > 0 {
		return existing
	}
	if len(configured) > 0 {
		return configured[:1]
	}
	return nil
}

// withDefaults fills what is still empty in cfg with OpenSSH's defaults,
// without reading any configuration (NewSSH must be cheap).
func withDefaults(cfg SSHConfig, r resolver) SSHConfig {
	if ep, err := parseEndpoint(cfg.Host); err == nil {
		cfg.Host = ep.host
		if cfg.User == "" {
			cfg.User = ep.user
		}
		if cfg.Port == 0 {
			cfg.Port = ep.port
		}
	}
	if cfg.Port == 0 {
		cfg.Port = 22
	}
	if cfg.User == "" {
		cfg.User = r.localUser
	}
	if len(cfg.IdentityFiles) == 0 {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			cfg.IdentityFiles = append(cfg.IdentityFiles, filepath.Join(r.home, ".ssh", n))
		}
	}
	if len(cfg.KnownHosts) == 0 {
		cfg.KnownHosts = []string{filepath.Join(r.home, ".ssh", "known_hosts"), "/etc/ssh/ssh_known_hosts"}
	}
	cfg.IdentityFiles = r.expandAll(cfg.IdentityFiles, cfg)
	cfg.KnownHosts = r.expandAll(cfg.KnownHosts, cfg)
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = 5 * time.Second
	}
	if cfg.KeepaliveMax <= 0 {
		cfg.KeepaliveMax = 3
	}
	return cfg
}

// quickAckConn is the TCP connection to the host, which ACKs what it
// reads at once until sshd has turned Nagle off (when a session first
// runs a command; commandsRan). Until then each small packet sshd sends
// while one is unacknowledged waits for the ACK, and Linux delays an ACK
// up to 40 ms when it has nothing to send: the server's hostkeys-00
// message after authentication held every connection's first session
// open 42 ms here (1.2 ms with this; the first hop of a jump stays
// quick for good). TCP_QUICKACK is not permanent, so it is set again
// after each read, a system call a read, only while it is needed.
type quickAckConn struct {
	*net.TCPConn
	raw  syscall.RawConn
	done atomic.Bool
}

func newQuickAckConn(tc *net.TCPConn) *quickAckConn {
	c := &quickAckConn{TCPConn: tc}
	raw, err := tc.SyscallConn()
	if err != nil {
		c.done.Store(true)
		return c
	}
	c.raw = raw
	c.quickAck()
	return c
}

func (c *quickAckConn) quickAck() {
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	})
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 && !c.done.Load() {
		c.quickAck()
	}
	return n, err
}

// commandsRan records that a session ran a command on the connection:
// sshd has turned Nagle off on it, so the ACKs need be quick no more, and
// forwarded traffic needs no session started for it (quickAcks).
func (c *sshConn) commandsRan() {
	c.commandRan.Store(true)
	if c.acks != nil {
		c.acks.done.Store(true)
	}
}

// quickAcks makes sure a command session has run on the connection before
// it carries forwarded traffic. OpenSSH's sshd turns Nagle off on a
// client connection only when a session runs a command; until then small
// forwarded writes wait on delayed ACKs, adding a 40 ms tail to HTTP
// latencies and skewing a streaming load's TTFT and TPOT
// (bench/README.md). Starting a worker (a command session) once per
// connection is enough; it is kept for later calls. A command that Run
// ran on the connection did the same: then no worker is started for it.
func (c *sshConn) quickAcks(ctx context.Context) {
	if c.commandRan.Load() {
		return
	}
	c.nodelay.Do(func() {
		if w, err := c.getWorker(ctx); err == nil {
			c.putWorker(w)
		}
	})
}
