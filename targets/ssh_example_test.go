package targets_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"lockstep/targets"
)

// A plan's target "gpu" { ssh { host = "gpu-node-1" } }: resolve it as ssh
// would, connect on first use, run, and tell a lost connection from a
// failed command.
func ExampleNewSSH() {
	cfg, how, err := targets.ResolveSSH("gpu", targets.SSHConfig{Host: "gpu-node-1", User: "root"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(how) // resolved with ssh -G (/usr/bin/ssh -G -l root -- gpu-node-1)

	gpu := targets.NewSSH("gpu", cfg)
	defer gpu.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := gpu.Run(ctx, targets.Command{Line: "nvidia-smi -L"})
	var hostKey *targets.HostKeyError
	switch {
	case errors.As(err, &hostKey):
		log.Fatal(err) // names the fingerprint and the ssh-keyscan command
	case errors.Is(err, targets.ErrDisconnected):
		log.Print("connection lost; the next call reconnects")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
	}
}
