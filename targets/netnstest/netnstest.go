package netnstest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"lockstep/targets/sshtest"
)

// SSHPort is the port every host's sshd listens on, on the host's address
// and on its loopback: each host has a network stack of its own.
const SSHPort = 22

// Options says what fleet to make.
type Options struct {
	Hosts int // 1 to 253
	// Hide lists files (~/.bashrc) that read as empty on every host, for a
	// benchmark that must not measure a login shell's start-up: the files
	// themselves are untouched. A file that does not exist is skipped.
	Hide []string
	// KeepaliveInterval and KeepaliveMax go into the ssh_config file
	// (ServerAliveInterval, whole seconds, and ServerAliveCountMax): a
	// client that reads it notices a host cut off after
	// KeepaliveInterval × KeepaliveMax without a reply (lockstep: between
	// that and one interval more). Defaults 2s and 3: a 6-8s window.
	KeepaliveInterval time.Duration
	KeepaliveMax      int
}

// Fleet is a set of hosts made by New, and their shared files.
type Fleet struct {
	ID      int          // unique among the fleets alive on the machine; in every name the fleet makes
	Dir     string       // the fleet's files: /run/lockstep-netns/ID
	Subnet  netip.Prefix // a /24 in 10.240.0.0/12 that no interface or route of the machine uses
	Gateway netip.Addr   // the test side's address on the bridge (.1)
	Bridge  string       // the bridge every host's link is a port of
	Hosts   []*Host      // n1..nN, in order

	User       string // the user every host accepts (the current one)
	UserKey    string // private key file, OpenSSH format, no passphrase
	KnownHosts string // every host's ed25519 key, by address
	// SSHConfig is an ssh_config file with a Host block for each host
	// (HostName, Port, User, IdentityFile, UserKnownHostsFile,
	// StrictHostKeyChecking yes, keepalives), for ssh -F.
	SSHConfig string

	// KeepaliveInterval and KeepaliveMax are what SSHConfig sets.
	KeepaliveInterval time.Duration
	KeepaliveMax      int

	hide  []string
	empty string // an empty file, bound over each of hide

	closeOnce sync.Once
	closeErr  error
}

// Host is one test host of a fleet.
type Host struct {
	Name      string     // "n1": its name in SSHConfig
	Rank      int        // 0-based, in the fleet's order
	Namespace string     // the network namespace (ip netns)
	Addr      netip.Addr // on Fleet.Subnet
	Link      string     // the test side's end of the host's veth pair, a port of Fleet.Bridge
	HostKey   ssh.PublicKey
	// OtherHostKey is sshd's ECDSA key, offered but not in known_hosts,
	// as on real hosts whose known_hosts line holds one of their keys.
	OtherHostKey ssh.PublicKey
	Dir          string // the host's files: sshd_config, host keys, sshd.log, tmp
	Tmp          string // the host's /tmp, as the test's side sees it
	Log          string // sshd's log

	fleet  *Fleet
	config string
	inode  uint64 // of the namespace, to find its processes after it is gone

	mu   sync.Mutex
	sshd *sshd // nil when stopped
}

// sshd is one running sshd -D of a host.
type sshd struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returned
}

// Start makes a fleet for the test, skipping it where namespaces cannot
// be made (see Require), and tears it down when the test ends, failing
// the test if anything of it is left.
func Start(t testing.TB, opts Options) *Fleet {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range f.Hosts {
				if log, err := os.ReadFile(h.Log); err == nil && len(log) > 0 {
					t.Logf("%s sshd log:\n%s", h.Name, tail(log, 4096))
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Errorf("netnstest: %v", err)
		}
	})
	return f
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// New makes a fleet of opts.Hosts hosts and returns once every host's
// sshd answers from the test's side. The caller must Close it. Fleets
// that a dead process left are swept first.
func New(ctx context.Context, opts Options) (_ *Fleet, err error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if opts.Hosts < 1 || opts.Hosts > 253 {
		return nil, fmt.Errorf("a fleet has 1 to 253 hosts (one /24), not %d", opts.Hosts)
	}
	if opts.KeepaliveInterval == 0 {
		opts.KeepaliveInterval = 2 * time.Second
	}
	if opts.KeepaliveInterval < time.Second || opts.KeepaliveInterval%time.Second != 0 {
		return nil, fmt.Errorf("KeepaliveInterval %s: ssh_config takes whole seconds", opts.KeepaliveInterval)
	}
	if opts.KeepaliveMax <= 0 {
		opts.KeepaliveMax = 3
	}
	if err := Sweep(); err != nil {
		return nil, fmt.Errorf("sweep fleets left by dead processes: %w", err)
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	id, subnet, err := claim()
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		ID:                id,
		Dir:               fleetDir(id),
		Subnet:            subnet,
		Gateway:           subnet.Addr().Next(),
		Bridge:            linkPrefix(id) + "br",
		User:              u.Username,
		KeepaliveInterval: opts.KeepaliveInterval,
		KeepaliveMax:      opts.KeepaliveMax,
	}
	for _, h := range opts.Hide {
		if _, err := os.Stat(h); err == nil {
			f.hide = append(f.hide, h)
		}
	}
	addr := f.Gateway
	for i := range opts.Hosts {
		addr = addr.Next()
		name := "n" + strconv.Itoa(i+1)
		h := &Host{
			Name:      name,
			Rank:      i,
			Namespace: nsPrefix(id) + name,
			Addr:      addr,
			Link:      linkPrefix(id) + "h" + strconv.Itoa(i+1),
			Dir:       filepath.Join(f.Dir, name),
			fleet:     f,
		}
		h.Tmp = filepath.Join(h.Dir, "tmp")
		h.Log = filepath.Join(h.Dir, "sshd.log")
		h.config = filepath.Join(h.Dir, "sshd_config")
		f.Hosts = append(f.Hosts, h)
	}
	// Registered once f.Hosts is whole: the signal handler reads it. A
	// signal before this leaves only the claimed directory, which the next
	// sweep removes.
	register(f)
	defer func() {
		if err != nil {
			if cerr := f.Close(); cerr != nil {
				err = fmt.Errorf("%w; and tearing down: %v", err, cerr)
			}
		}
	}()
	// sshd refuses to start without its privilege separation directory,
	// which only the openssh-server service normally creates.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	if err := f.writeFiles(); err != nil {
		return nil, err
	}
	if err := f.makeNetwork(ctx); err != nil {
		return nil, err
	}
	// Bounded: sshd start-up is CPU work, and the machine has few cores.
	errs := make([]error, len(f.Hosts))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, h := range f.Hosts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = h.StartSSHD(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// Host is the host named name ("n3"), or nil.
func (f *Fleet) Host(name string) *Host {
	for _, h := range f.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Names are the hosts' names, in order.
func (f *Fleet) Names() []string {
	names := make([]string, len(f.Hosts))
	for i, h := range f.Hosts {
		names[i] = h.Name
	}
	return names
}

// writeFiles writes the keys, known_hosts, authorized_keys, each host's
// sshd_config, and the ssh_config that names the hosts.
func (f *Fleet) writeFiles() error {
	f.UserKey = filepath.Join(f.Dir, "user_ed25519")
	userPub, err := sshtest.WriteKey(f.UserKey, "")
	if err != nil {
		return err
	}
	authorized := filepath.Join(f.Dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		return err
	}
	f.empty = filepath.Join(f.Dir, "empty")
	if err := os.WriteFile(f.empty, nil, 0o444); err != nil {
		return err
	}
	var known, config strings.Builder
	for _, h := range f.Hosts {
		if err := os.MkdirAll(h.Tmp, 0o755); err != nil {
			return err
		}
		// As /tmp is: anyone may write, only the owner may remove.
		if err := os.Chmod(h.Tmp, 0o1777); err != nil {
			return err
		}
		hostKey := filepath.Join(h.Dir, "host_ed25519")
		if h.HostKey, err = sshtest.WriteKey(hostKey, ""); err != nil {
			return err
		}
		otherKey := filepath.Join(h.Dir, "host_ecdsa")
		if h.OtherHostKey, err = sshtest.WriteECDSAKey(otherKey); err != nil {
			return err
		}
		text := sshtest.Config([]string{fmt.Sprintf("%s:%d", h.Addr, SSHPort), fmt.Sprintf("127.0.0.1:%d", SSHPort)}, []string{hostKey, otherKey}, authorized)
		if err := os.WriteFile(h.config, []byte(text), 0o600); err != nil {
			return err
		}
		known.WriteString(sshtest.KnownHostsLine(h.Addr.String(), SSHPort, h.HostKey))
		fmt.Fprintf(&config, `Host %s
	HostName %s
	Port %d
	User %s
	IdentityFile %s
	IdentitiesOnly yes
	UserKnownHostsFile %s
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	BatchMode yes
	ConnectTimeout 10
	ServerAliveInterval %d
	ServerAliveCountMax %d
`, h.Name, h.Addr, SSHPort, f.User, f.UserKey, filepath.Join(f.Dir, "known_hosts"),
			int(f.KeepaliveInterval/time.Second), f.KeepaliveMax)
	}
	f.KnownHosts = filepath.Join(f.Dir, "known_hosts")
	if err := os.WriteFile(f.KnownHosts, []byte(known.String()), 0o600); err != nil {
		return err
	}
	f.SSHConfig = filepath.Join(f.Dir, "ssh_config")
	return os.WriteFile(f.SSHConfig, []byte(config.String()), 0o600)
}

// makeNetwork makes the bridge, a namespace and a veth pair per host
// (the host's end is its eth0), and configures each host's addresses.
// No IPv6 address is generated anywhere, so nothing is sent on the links
// unasked.
func (f *Fleet) makeNetwork(ctx context.Context) error {
	var b strings.Builder
	fmt.Fprintf(&b, "link add %s type bridge\n", f.Bridge)
	fmt.Fprintf(&b, "link set %s addrgenmode none\n", f.Bridge)
	fmt.Fprintf(&b, "addr add %s/%d dev %s\n", f.Gateway, f.Subnet.Bits(), f.Bridge)
	fmt.Fprintf(&b, "link set %s up\n", f.Bridge)
	for _, h := range f.Hosts {
		fmt.Fprintf(&b, "netns add %s\n", h.Namespace)
		fmt.Fprintf(&b, "link add %s type veth peer name eth0 netns %s\n", h.Link, h.Namespace)
		fmt.Fprintf(&b, "link set %s addrgenmode none\n", h.Link)
		fmt.Fprintf(&b, "link set %s master %s up\n", h.Link, f.Bridge)
	}
	if err := ipBatch(ctx, "", false, b.String()); err != nil {
		return err
	}
	errs := make([]error, len(f.Hosts))
	var wg sync.WaitGroup
	for i, h := range f.Hosts {
		wg.Go(func() {
			inode, err := nsInode(h.Namespace)
			if err != nil {
				errs[i] = err
				return
			}
			h.inode = inode
			errs[i] = ipBatch(ctx, h.Namespace, false, fmt.Sprintf(
				"link set lo up\nlink set eth0 addrgenmode none\naddr add %s/%d dev eth0\nlink set eth0 up\n",
				h.Addr, f.Subnet.Bits()))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ipBatch runs `ip [-n NS] [-force] -batch -` on the lines (ns "" for
// this namespace); -force goes on past a line that fails.
func ipBatch(ctx context.Context, ns string, force bool, lines string) error {
	args := []string{"-batch", "-"}
	if force {
		args = append([]string{"-force"}, args...)
	}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdin = strings.NewReader(lines)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close tears the fleet down: every process on its hosts is killed (sshd,
// its sessions, what they started), then its links, namespaces and files
// go. It returns an error naming what is left, if anything is. Closing
// twice does the work once.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() {
		for _, h := range f.Hosts {
			h.mu.Lock()
			if h.sshd != nil {
				_ = h.sshd.cmd.Process.Kill()
				<-h.sshd.exited
				h.sshd = nil
			}
			h.mu.Unlock()
		}
		f.closeErr = teardown(f.ID, f.inodes())
		unregister(f)
	})
	return f.closeErr
}

// Leftovers lists what of the fleet still exists: namespaces, links,
// processes on its hosts, its files. Empty after Close.
func (f *Fleet) Leftovers() []string { return leftovers(f.ID, f.inodes()) }

func (f *Fleet) inodes() []uint64 {
	var in []uint64
	for _, h := range f.Hosts {
		if h.inode != 0 {
			in = append(in, h.inode)
		}
	}
	return in
}
