package runner

import (
	"fmt"
	"strings"
	"sync"

	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/targets"
)

// FleetHost is one host of a fleet target as it was opened: its target,
// or why it could not be (that host's steps fail with it).
type FleetHost struct {
	Name   string // as the plan's hosts names it
	Target targets.Target
	Err    error
}

// FleetOpener opens a plan's fleet target by name: one target per host,
// in rank order.
type FleetOpener func(name string, tell func(events.Event)) ([]FleetHost, error)

// resolveAtOnce bounds how many hosts of a fleet are resolved at once
// (each an ssh -G).
const resolveAtOnce = 16

// OpenFleet returns the function the runner opens a fleet target with:
// each host resolved (ssh -G, or the target's config_file) and verified
// against known_hosts exactly as a target of one host is, with the
// target's other ssh settings, env and workdir. tell gets one line for
// the fleet, not one per host.
func OpenFleet(p *plans.Plan, s *plans.Scope) FleetOpener {
	return func(name string, tell func(events.Event)) ([]FleetHost, error) {
		t := p.Target(name)
		if !t.Fleet() {
			return nil, fmt.Errorf("target %s names no hosts", name)
		}
		hosts, err := s.FleetHosts(t)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", name, err)
		}
		ectx := s.EvalContext(nil)
		env, err := evalEnvMap(t.Env, ectx)
		if err != nil {
			return nil, fmt.Errorf("env: %w", err)
		}
		dir, _, err := evalText(t.Workdir, ectx)
		if err != nil {
			return nil, fmt.Errorf("workdir: %w", err)
		}
		base, err := sshConfig(t.SSH, ectx)
		if err != nil {
			return nil, err
		}
		base.Env, base.Workdir = env, dir
		// A host cut off fails its step at once (the fleet's rule
		// decides), instead of redialing until the step's timeout.
		base.NoReconnect = true
		out := make([]FleetHost, len(hosts))
		cfgs := make([]targets.SSHConfig, len(hosts))
		hows := make([]string, len(hosts))
		var wg sync.WaitGroup
		sem := make(chan struct{}, resolveAtOnce)
		for i, h := range hosts {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				cfg := base
				cfg.Host = h
				cfg, how, err := targets.ResolveSSH(name+"["+h+"]", cfg)
				out[i] = FleetHost{Name: h, Err: err}
				if err == nil {
					out[i].Target = targets.NewSSH(name, cfg)
					cfgs[i], hows[i] = cfg, how.String()
				}
			})
		}
		wg.Wait()
		var where []string
		var failed []string
		for i, h := range out {
			if h.Err != nil {
				failed = append(failed, h.Name)
				continue
			}
			where = append(where, fmt.Sprintf("%s = %s@%s:%d", h.Name, cfgs[i].User, cfgs[i].Host, cfgs[i].Port))
		}
		msg := fmt.Sprintf("target %s: %d hosts", name, len(hosts))
		if len(where) > 0 {
			shown := where
			if len(shown) > 3 {
				shown = []string{where[0], where[1], "…", where[len(where)-1]}
			}
			msg += ": " + strings.Join(shown, ", ") + ", " + firstNonEmpty(hows)
		}
		if len(failed) > 0 {
			msg += fmt.Sprintf("; %d could not be resolved: %s", len(failed), strings.Join(failed, ", "))
		}
		tell(events.Event{Type: events.TargetOpened, Message: msg})
		if base.InsecureIgnoreHostKey {
			tell(events.Event{Type: events.Warning, Message: fmt.Sprintf("target %s: host keys are not verified (insecure_ignore_host_key = true): anyone between here and its hosts can read and change this run", name)})
		}
		return out, nil
	}
}

func firstNonEmpty(ss []string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
