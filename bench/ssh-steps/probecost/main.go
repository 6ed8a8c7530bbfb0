// Command probecost times, one kind at a time, the SSH target calls that
// lockstep's steps in bench/ssh-steps/plan.hcl are made of, on one reused
// connection: what a run step, a port probe and a file probe cost, and the
// parts of them. bench/ssh-steps.sh -p runs it against its sshd.
//
// usage: probecost -port N -user U -key FILE -known-hosts FILE -listen-port N -file FILE
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/targets"
)

func main() {
	var (
		port       = flag.Int("port", 22, "sshd's port on 127.0.0.1")
		user       = flag.String("user", "root", "remote user")
		key        = flag.String("key", "", "identity file")
		knownHosts = flag.String("known-hosts", "", "known_hosts file")
		listenPort = flag.Int("listen-port", 0, "a port the host listens on")
		file       = flag.String("file", "", "a file on the host")
		n          = flag.Int("n", 15, "calls per measurement (the median is printed)")
	)
	flag.Parse()
	if err := run(*port, *user, *key, *knownHosts, *listenPort, *file, *n); err != nil {
		fmt.Fprintln(os.Stderr, "probecost:", err)
		os.Exit(1)
	}
}

func run(port int, user, key, knownHosts string, listenPort int, file string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := targets.NewSSH("box", targets.SSHConfig{
		Host: "127.0.0.1", Port: port, User: user,
		IdentityFiles: []string{key}, KnownHosts: []string{knownHosts},
	})
	defer s.Close()

	start := time.Now()
	if _, err := s.Run(ctx, targets.Command{Line: "true"}); err != nil {
		return err
	}
	fmt.Printf("%-44s %8.2f ms\n", "new connection + Run(true)", ms(time.Since(start)))

	var data []byte
	rows := []struct {
		name string
		call func() error
	}{
		{"Run(true): a run step's action", func() error {
			_, err := s.Run(ctx, targets.Command{Line: "true"})
			return err
		}},
		{"Dial: the port probe's open", func() error {
			c, err := s.Dial(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort)))
			if err == nil {
				c.Close()
			}
			return err
		}},
		{"Listeners: the port probe's pid, command", func() error {
			_, err := s.Listeners(ctx, listenPort)
			return err
		}},
		{"Stat (a worker script running stat)", func() error {
			_, err := s.Stat(ctx, file)
			return err
		}},
		{"ReadAt 4 KiB", func() error {
			_, _, err := s.ReadAt(ctx, file, 0, 4096)
			return err
		}},
		{"ReadAt 1 MiB: the file probe's read", func() error {
			var err error
			data, _, err = s.ReadAt(ctx, file, 0, 1<<20)
			return err
		}},
		{"sha256 of what was read, locally", func() error {
			sha256.Sum256(data)
			return nil
		}},
		{"cty.StringVal of it: the probe's content", func() error {
			cty.StringVal(string(data))
			return nil
		}},
		{"cty.StringVal of as much ASCII", func() error {
			cty.StringVal(strings.Repeat("x", len(data)))
			return nil
		}},
		{"Run(stat + sha256sum) on the host", func() error {
			q := "'" + strings.ReplaceAll(file, "'", `'\''`) + "'"
			_, err := s.Run(ctx, targets.Command{Line: "stat -c %s " + q + " && sha256sum " + q})
			return err
		}},
	}
	for _, r := range rows {
		d, err := median(n, r.call)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		fmt.Printf("%-44s %8.2f ms\n", r.name, ms(d))
	}
	return nil
}

func median(n int, f func() error) (time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
