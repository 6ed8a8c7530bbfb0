// Package sshtest starts SSH servers for tests of the SSH target: a real
// OpenSSH sshd on 127.0.0.1 with its own host key, user key and
// known_hosts, and a proxy in front of it whose connections a test can cut
// or freeze, for the faults a healthy sshd never shows.
//
// Everything lives in the test's t.TempDir and stops with the test.
//
// Start reading at StartSSHD.
package sshtest
