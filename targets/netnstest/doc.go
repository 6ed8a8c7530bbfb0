// Package netnstest makes a fleet of test hosts on one machine, each in a
// network namespace of its own, for tests and benchmarks of plans that
// run on many hosts: host n1..nN has its own address on a bridge the
// test's side shares, its own OpenSSH sshd on port 22 with host keys of
// its own, and its own /tmp. The fleet has one user key, one known_hosts
// holding every host's key, and an ssh_config file that names the hosts,
// so `ssh -F fleet.SSHConfig n3` (or lockstep's resolver pointed at that
// file) reaches n3 with its host key verified.
//
// Faults: Host.LinkDown cuts a host off (its link set down: nobody is
// told, as when a cable is pulled), Host.StopSSHD stops its sshd, and
// Host.Exec runs a command on the host, inside its namespace.
//
// Start (for a test) or New (for a benchmark) makes a fleet; Close tears
// it down: every process on every host (sshd, its sessions, whatever they
// launched), the links, the namespaces, the files; Close checks that none
// is left. A fleet left by a process that died without its cleanup
// (SIGKILL, a test binary's -timeout) is swept by the next New; SIGINT,
// SIGTERM and SIGHUP close the live fleets before the process dies of
// the signal.
//
// The hosts share the machine's kernel, its process table and every
// file but /tmp (and the files Options.Hide empties): a process on n2 is
// visible by pid from n1, as it would not be on real hosts. Listeners
// (/proc/net) are per host.
//
// Start here: Start, Fleet, Host.
package netnstest
