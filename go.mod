module lockstep

go 1.26.0

require (
	github.com/kevinburke/ssh_config v1.6.0
	github.com/skeema/knownhosts v1.3.3
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0
)
