// Package targets runs commands, launches processes and reads state on the
// machines a plan names: the local one, or a host over SSH. The runner and
// the probes see only the Target interface, so a plan runs the same on
// either by changing its target.
//
// Start reading at Target (targets.go), the contract every target keeps;
// then local.go and ssh.go, one each; members.go for how a launch's
// processes are found by their mark.
package targets
