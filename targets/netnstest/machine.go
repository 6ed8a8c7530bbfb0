package netnstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lockstep/targets/sshtest"
)

// stateRoot holds a directory per live fleet, named by its ID: creating
// it claims the ID (and so the subnet and every name) machine-wide, and
// its owner file says which process may remove it.
const stateRoot = "/run/lockstep-netns"

// fleetIDs is how many fleets can be alive at once: fleet k has subnet
// 10.(240 + k/256).(k%256).0/24.
const fleetIDs = 16 * 256

func fleetDir(id int) string { return filepath.Join(stateRoot, strconv.Itoa(id)) }

// nsPrefix starts the name of every namespace of fleet id.
func nsPrefix(id int) string { return "lockstep-" + strconv.Itoa(id) + "-" }

// linkPrefix starts the name of every link of fleet id; "lst4095h253" is
// within the kernel's 15 bytes.
func linkPrefix(id int) string { return "lst" + strconv.Itoa(id) }

func subnetOf(id int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(240 + id/256), byte(id % 256), 0}), 24)
}

// ErrUnsupported is a machine where the test hosts cannot be made.
var ErrUnsupported = errors.New("test hosts in network namespaces cannot be made here")

// Check tells whether fleets can be made here: root (ip netns add needs
// CAP_SYS_ADMIN, the links CAP_NET_ADMIN), the ip command, OpenSSH's sshd,
// and a namespace made and removed to prove it. The error wraps
// ErrUnsupported and says what to install or grant.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (ip netns add needs CAP_SYS_ADMIN and CAP_NET_ADMIN): run the tests as root", ErrUnsupported)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command: apt-get install iproute2", ErrUnsupported)
	}
	if _, err := os.Stat(sshtest.SSHDPath); err != nil {
		return fmt.Errorf("%w: %s is missing: apt-get install openssh-server", ErrUnsupported, sshtest.SSHDPath)
	}
	probe := fmt.Sprintf("lockstep-probe-%d-%d", os.Getpid(), rand.Uint32())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: ip netns add: %v: %s (a container needs CAP_SYS_ADMIN and CAP_NET_ADMIN: docker run --cap-add SYS_ADMIN --cap-add NET_ADMIN, or --privileged)",
			ErrUnsupported, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "netns", "del", probe).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: ip netns del %s: %v: %s", ErrUnsupported, probe, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Require skips the test when Check fails, saying why, except under
// CI=true: CI must run these tests, so there the test fails instead of
// passing vacuously.
func Require(t testing.TB) {
	t.Helper()
	err := Check()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; CI=true, so this fails rather than skips: CI must run the tests of many hosts", err)
	}
	t.Skipf("%v", err)
}

// claim takes a free fleet ID whose subnet no interface address or route
// of the machine overlaps, starting at a random one so that fleets made
// at the same moment rarely race for the same.
func claim() (int, netip.Prefix, error) {
	if err := os.MkdirAll(stateRoot, 0o755); err != nil {
		return 0, netip.Prefix{}, err
	}
	used, err := usedPrefixes()
	if err != nil {
		return 0, netip.Prefix{}, err
	}
	start := rand.IntN(fleetIDs)
	for i := range fleetIDs {
		id := (start + i) % fleetIDs
		subnet := subnetOf(id)
		if slices.ContainsFunc(used, subnet.Overlaps) {
			continue
		}
		err := os.Mkdir(fleetDir(id), 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return 0, netip.Prefix{}, err
		}
		if err := writeOwner(id); err != nil {
			os.Remove(fleetDir(id))
			return 0, netip.Prefix{}, err
		}
		return id, subnet, nil
	}
	return 0, netip.Prefix{}, fmt.Errorf("no free subnet in 10.240.0.0/12: %d fleets alive, or the machine's networks overlap them", fleetIDs)
}

// usedPrefixes are the machine's IPv4 networks: its interfaces' and the
// destinations of its routes, in every table.
func usedPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			used = append(used, p.Masked())
		}
	}
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("ip route: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if dst == "default" {
			continue // 0.0.0.0/0 overlaps everything and says nothing
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			used = append(used, p.Masked())
		}
	}
	return used, nil
}

// The owner file holds "pid start-time" of the process that made the
// fleet: the start time tells it from a later process given the same pid.
func writeOwner(id int) error {
	st, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(fleetDir(id), "owner"), fmt.Appendf(nil, "%d %d\n", os.Getpid(), st), 0o644)
}

// ownerAlive tells whether the process that made fleet id still runs. A
// directory without an owner file is one being made, for a minute.
func ownerAlive(id int) bool {
	b, err := os.ReadFile(filepath.Join(fleetDir(id), "owner"))
	if err != nil {
		fi, serr := os.Stat(fleetDir(id))
		return serr == nil && time.Since(fi.ModTime()) < time.Minute
	}
	var pid int
	var st uint64
	if _, err := fmt.Sscan(string(b), &pid, &st); err != nil {
		return false
	}
	now, err := startTime(pid)
	return err == nil && now == st
}

// startTime is field 22 of /proc/PID/stat: clock ticks after boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Sweep tears down every fleet whose owner process is gone (killed, or
// a test binary that hit its -timeout): New calls it, and a test can, to
// prove it.
func Sweep() error {
	ents, err := os.ReadDir(stateRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil || id < 0 || id >= fleetIDs || ownerAlive(id) {
			continue
		}
		errs = append(errs, teardown(id, nil))
	}
	return errors.Join(errs...)
}

// Leftovers lists what of fleet id exists: its namespaces, its links, the
// processes in those namespaces, its sshd listeners, its directory. A
// fleet's own Leftovers also finds processes in its namespaces after they
// were removed.
func Leftovers(id int) []string { return leftovers(id, nil) }

func leftovers(id int, inodes []uint64) []string {
	var left []string
	nss, _ := namespaces(id)
	for _, ns := range nss {
		left = append(left, "namespace "+ns)
		if in, err := nsInode(ns); err == nil && !slices.Contains(inodes, in) {
			inodes = append(inodes, in)
		}
	}
	links, _ := links(id)
	for _, l := range links {
		left = append(left, "link "+l)
	}
	pids, _ := inNamespaces(inodes)
	pids = append(pids, sshdsOf(fleetDir(id)+"/")...)
	slices.Sort(pids)
	for _, pid := range slices.Compact(pids) {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		left = append(left, fmt.Sprintf("process %d %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '})))
	}
	if _, err := os.Stat(fleetDir(id)); err == nil {
		left = append(left, "directory "+fleetDir(id))
	}
	return left
}

// teardown kills every process in fleet id's namespaces (and those of
// inodes, for namespaces already removed), removes its links, namespaces
// and directory, and says what is left. Two processes may sweep the same
// dead fleet at once: what one removed the other fails to, so only what
// is left in the end is an error.
func teardown(id int, inodes []uint64) error {
	nss, err := namespaces(id)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if in, err := nsInode(ns); err == nil && !slices.Contains(inodes, in) {
			inodes = append(inodes, in)
		}
	}
	var errs []error
	if err := killAll(inodes, sshdsOf(fleetDir(id)+"/")); err != nil {
		errs = append(errs, err)
	}
	// The links first: deleting a veth deletes its pair at once, where a
	// namespace's own links go only when the kernel gets to it.
	var b strings.Builder
	ls, err := links(id)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range ls {
		fmt.Fprintf(&b, "link del %s\n", l)
	}
	for _, ns := range nss {
		fmt.Fprintf(&b, "netns del %s\n", ns)
	}
	if b.Len() > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// -force: on through a line that fails, so one missing link does
		// not keep the rest.
		err := ipBatch(ctx, "", true, b.String())
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(fleetDir(id)); err != nil {
		errs = append(errs, err)
	}
	if left := leftovers(id, inodes); len(left) > 0 {
		errs = append(errs, fmt.Errorf("fleet %d left: %s", id, strings.Join(left, "; ")))
		return errors.Join(errs...)
	}
	return nil
}

// killAll sends SIGKILL to every process in the namespaces and to pids,
// again until none is left (one may fork before it dies), and waits for
// them to be gone. Bounded: a process that will not die (stuck in the
// kernel) is reported by the leftovers check.
func killAll(inodes []uint64, pids []int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		in, err := inNamespaces(inodes)
		if err != nil {
			return err
		}
		alive := slices.DeleteFunc(append(in, pids...), func(pid int) bool {
			return syscall.Kill(pid, 0) != nil
		})
		if len(alive) == 0 || time.Now().After(deadline) {
			return nil
		}
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// A killed process leaves /proc only once it is reaped: give the
		// kernel and the reaper a moment before looking again.
		time.Sleep(10 * time.Millisecond)
		pids = nil
	}
}

// namespaces lists fleet id's namespaces (ip netns list reads the same
// directory).
func namespaces(id int) ([]string, error) {
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), nsPrefix(id)) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// links lists fleet id's links in this namespace: its bridge and the
// test side's ends of its veth pairs.
func links(id int) ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	p := linkPrefix(id)
	var out []string
	for _, i := range ifs {
		rest, ok := strings.CutPrefix(i.Name, p)
		if !ok {
			continue
		}
		if n, ok := strings.CutPrefix(rest, "h"); rest == "br" || ok && isDigits(n) {
			out = append(out, i.Name)
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// nsInode is the inode of namespace ns, as /proc/PID/ns/net names it.
func nsInode(ns string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", ns), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// inNamespaces lists the live processes whose network namespace is one
// of inodes. A zombie has no namespace left and is not listed.
func inNamespaces(inodes []uint64) ([]int, error) {
	if len(inodes) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(inodes))
	for _, in := range inodes {
		want["net:["+strconv.FormatUint(in, 10)+"]"] = true
	}
	var pids []int
	err := eachProcess(func(pid int) {
		if link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net"); err == nil && want[link] {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// sshdsOf lists the sshd listeners whose command line holds dir (started
// with -f DIR/n1/sshd_config), in whatever namespace: the clients that
// read the fleet's files (ssh -F) are not the fleet's to kill.
func sshdsOf(dir string) []int {
	var pids []int
	_ = eachProcess(func(pid int) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.HasPrefix(b, []byte(sshtest.SSHDPath+"\x00")) && bytes.Contains(b, []byte(dir)) {
			pids = append(pids, pid)
		}
	})
	return pids
}

func eachProcess(f func(pid int)) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			f(pid)
		}
	}
	return nil
}

// live is the fleets of this process not yet closed, for the signal
// handler: a fatal signal skips every t.Cleanup and deferred call, so the
// fleets must be closed from here, which only a process-wide list allows.
var live struct {
	sync.Mutex
	fleets  map[*Fleet]bool
	signals chan os.Signal
}

// register adds f to the live fleets; the first one starts the handler
// of SIGINT, SIGTERM and SIGHUP, which closes them all and then dies of
// the signal, as the process would have.
func register(f *Fleet) {
	live.Lock()
	defer live.Unlock()
	if live.fleets == nil {
		live.fleets = map[*Fleet]bool{}
	}
	live.fleets[f] = true
	if live.signals != nil {
		return
	}
	ch := make(chan os.Signal, 1)
	live.signals = ch
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig, ok := <-ch
		if !ok {
			return
		}
		live.Lock()
		fleets := make([]*Fleet, 0, len(live.fleets))
		for f := range live.fleets {
			fleets = append(fleets, f)
		}
		live.Unlock()
		for _, f := range fleets {
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "netnstest: %v\n", err)
			}
		}
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
}

// unregister removes f; the last one stops the signal handler.
func unregister(f *Fleet) {
	live.Lock()
	defer live.Unlock()
	delete(live.fleets, f)
	if len(live.fleets) == 0 && live.signals != nil {
		signal.Stop(live.signals)
		close(live.signals)
		live.signals = nil
	}
}
