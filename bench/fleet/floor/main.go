// Command floor is the fleet bench's anchor: the least a tool can do for
// the plan of bench/fleet/fleet.hcl, so that bench/fleet.sh can say what
// ratio of 50 hosts to 1 the machine itself allows. For every host at
// once: one x/crypto/ssh connection (the fleet's key, its known_hosts
// with the host key verified, the address from its ssh_config), one
// session that execs `true` and waits for its exit status; then, once
// every host has run it (a step ends on every host before the next
// starts), one direct-tcpip channel to the host's own 127.0.0.1:22,
// opened and closed (the port check, as lockstep's port probe makes
// it); then the connections close. Nothing else: no ssh -G, no shell
// but the one sshd starts, no look for what the command left, no record.
//
// It reads the variables bench/fleet/hosts gives its command
// (FLEET_HOSTS, FLEET_SSH_CONFIG, FLEET_USER, FLEET_KEY,
// FLEET_KNOWN_HOSTS) and exits 1 unless every host did both.
//
// usage: floor
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run() error {
	hosts := strings.Fields(os.Getenv("FLEET_HOSTS"))
	if len(hosts) == 0 {
		return errors.New("FLEET_HOSTS is empty: run under bench/fleet/hosts")
	}
	cfgFile, err := os.Open(os.Getenv("FLEET_SSH_CONFIG"))
	if err != nil {
		return err
	}
	cfg, err := ssh_config.Decode(cfgFile)
	cfgFile.Close()
	if err != nil {
		return err
	}
	key, err := os.ReadFile(os.Getenv("FLEET_KEY"))
	if err != nil {
		return err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return err
	}
	check, err := knownhosts.New(os.Getenv("FLEET_KNOWN_HOSTS"))
	if err != nil {
		return err
	}
	cc := &ssh.ClientConfig{
		User:              os.Getenv("FLEET_USER"),
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   check,
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}, // what known_hosts holds
		Timeout:           10 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	clients := make([]*ssh.Client, len(hosts))
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	// The run step: connect and exec on every host at once.
	err = each(hosts, func(i int, h string) error {
		addr, err := hostAddr(cfg, h)
		if err != nil {
			return err
		}
		c, err := ssh.Dial("tcp", addr, cc)
		if err != nil {
			return err
		}
		clients[i] = c
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Run("true")
	})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// The wait step: the port accepts a connection on every host (the
	// channel opens once the host's connect succeeded), as lockstep's
	// port probe asks it.
	err = each(hosts, func(i int, h string) error {
		nc, err := clients[i].DialContext(ctx, "tcp", "127.0.0.1:22")
		if err != nil {
			return err
		}
		return nc.Close()
	})
	if err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	fmt.Printf("floor: run and wait on %d/%d hosts\n", len(hosts), len(hosts))
	return nil
}

// each runs f for every host at once and returns the first error, with
// its host's name.
func each(hosts []string, f func(int, string) error) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			if err := f(i, h); err != nil {
				errs[i] = fmt.Errorf("%s: %w", h, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hostAddr is host's HostName and Port in the fleet's ssh_config.
func hostAddr(cfg *ssh_config.Config, host string) (string, error) {
	name, err := cfg.Get(host, "HostName")
	if err != nil || name == "" {
		return "", fmt.Errorf("no HostName for %s in the fleet's ssh_config (%v)", host, err)
	}
	port, _ := cfg.Get(host, "Port")
	if port == "" {
		port = "22"
	}
	return net.JoinHostPort(name, port), nil
}
