package probes

import (
	"testing"

	"lockstep/targets"
	"lockstep/targets/sshtest"
)

// The same launch following over SSH: the host's files are read by
// identity by the SSH target's worker scripts.
func TestFollowLaunchReadsOnlyItsOwnLogSSH(t *testing.T) {
	srv := sshtest.StartSSHD(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	s := targets.NewSSH("remote", targets.SSHConfig{
		Host:          srv.Host,
		Port:          srv.Port,
		User:          srv.User,
		IdentityFiles: []string{srv.UserKey},
		KnownHosts:    []string{srv.KnownHosts},
	})
	t.Cleanup(func() { s.Close() })
	testFollowLaunchReadsOnlyItsOwnLog(t, s)
}
