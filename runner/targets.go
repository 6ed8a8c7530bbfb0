package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/targets"
)

// TargetOpener opens a plan's target by name; tell receives what the user
// should be told about it.
type TargetOpener func(name string, tell func(events.Event)) (targets.Target, error)

// OpenTarget returns the function the runner uses to open a plan's
// targets by name: the local machine, or a host over SSH as the target's
// ssh block (and ~/.ssh/config) says. tell receives what the user is told
// about a target: where it resolved to, and warnings such as host keys not
// being checked (on every run).
func OpenTarget(p *plans.Plan, s *plans.Scope) TargetOpener {
	return func(name string, tell func(events.Event)) (targets.Target, error) {
		t := p.Target(name)
		if t == nil {
			if name != "local" {
				return nil, fmt.Errorf("the plan declares no target %q", name)
			}
			return targets.NewLocal(), nil
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
		if t.SSH == nil {
			return withDefaults(targets.NewLocal(), env, dir), nil
		}
		cfg, err := sshConfig(t.SSH, ectx)
		if err != nil {
			return nil, err
		}
		cfg.Env, cfg.Workdir = env, dir
		// What the plan leaves empty comes from ~/.ssh/config, as ssh reads it.
		cfg, how, err := targets.ResolveSSH(name, cfg)
		if err != nil {
			return nil, err
		}
		where := fmt.Sprintf("%s@%s:%d", cfg.User, cfg.Host, cfg.Port)
		if cfg.ProxyJump != "" {
			where += " via " + cfg.ProxyJump
		}
		tell(events.Event{Type: events.TargetOpened, Message: fmt.Sprintf("target %s: %s, %s", name, where, how)})
		if cfg.InsecureIgnoreHostKey {
			tell(events.Event{Type: events.Warning, Message: fmt.Sprintf("target %s: host keys are not verified (insecure_ignore_host_key = true): anyone between here and %s can read and change this run", name, cfg.Host)})
		}
		return targets.NewSSH(name, cfg), nil
	}
}

func sshConfig(b *plans.SSH, ectx *hcl.EvalContext) (targets.SSHConfig, error) {
	var cfg targets.SSHConfig
	var err error
	text := func(e hcl.Expression, what string) string {
		if err != nil {
			return ""
		}
		var s string
		s, _, err = evalText(e, ectx)
		if err != nil {
			err = fmt.Errorf("ssh %s: %w", what, err)
		}
		return s
	}
	cfg.Host = text(b.Host, "host")
	cfg.User = text(b.User, "user")
	if port := text(b.Port, "port"); port != "" && err == nil {
		if cfg.Port, err = strconv.Atoi(port); err != nil {
			err = fmt.Errorf("ssh port: %q is not a port number", port)
		}
	}
	if f := text(b.IdentityFile, "identity_file"); f != "" {
		cfg.IdentityFiles = []string{f}
	}
	if f := text(b.KnownHosts, "known_hosts"); f != "" {
		cfg.KnownHosts = []string{f}
	}
	cfg.ProxyJump = text(b.ProxyJump, "proxy_jump")
	cfg.ConfigFile = text(b.ConfigFile, "config_file")
	cfg.PassphraseEnv = text(b.PassphraseEnv, "passphrase_env")
	if insecure := text(b.InsecureIgnoreHostKey, "insecure_ignore_host_key"); insecure == "true" {
		cfg.InsecureIgnoreHostKey = true
	}
	if ct := text(b.ConnectTimeout, "connect_timeout"); ct != "" && err == nil {
		if cfg.ConnectTimeout, err = time.ParseDuration(ct); err != nil {
			err = fmt.Errorf("ssh connect_timeout: %w", err)
		}
	}
	return cfg, err
}

// evalText evaluates an attribute an action uses (a host, a path) to its
// plain text, saying whether it was sensitive; an absent one is "".
func evalText(e hcl.Expression, ectx *hcl.EvalContext) (text string, sensitive bool, err error) {
	if e == nil {
		return "", false, nil
	}
	v, diags := e.Value(ectx)
	if diags.HasErrors() {
		return "", false, errors.New(diagText(diags))
	}
	return plain(v)
}

func evalEnvMap(e hcl.Expression, ectx *hcl.EvalContext) (map[string]string, error) {
	if e == nil {
		return nil, nil
	}
	v, diags := e.Value(ectx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", diagText(diags))
	}
	return envOf(v)
}

func envOf(v cty.Value) (map[string]string, error) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return nil, nil
	}
	if !v.CanIterateElements() {
		return nil, fmt.Errorf("must be a map of strings")
	}
	env := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		s, _, err := plain(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.AsString(), err)
		}
		env[k.AsString()] = s
	}
	return env, nil
}

// defaulted gives every command on a target the target's env and workdir;
// a step's own env and workdir win.
type defaulted struct {
	targets.Target
	env map[string]string
	dir string
}

func withDefaults(t targets.Target, env map[string]string, dir string) targets.Target {
	if len(env) == 0 && dir == "" {
		return t
	}
	return &defaulted{Target: t, env: env, dir: dir}
}

func (d *defaulted) apply(c targets.Command) targets.Command {
	env := maps.Clone(d.env)
	maps.Copy(env, c.Env)
	c.Env = env
	if c.Dir == "" {
		c.Dir = d.dir
	}
	return c
}

func (d *defaulted) Run(ctx context.Context, c targets.Command) (targets.Result, error) {
	return d.Target.Run(ctx, d.apply(c))
}

func (d *defaulted) Start(ctx context.Context, c targets.Command, log string) (targets.Process, error) {
	return d.Target.Start(ctx, d.apply(c), log)
}

// isLocal reports whether t is this machine, where checks are cheap.
func isLocal(t targets.Target) bool {
	if d, ok := t.(*defaulted); ok {
		t = d.Target
	}
	_, ok := t.(*targets.Local)
	return ok
}
