package runner

import (
	"fmt"

	"lockstep/plans"
	"lockstep/targets"
)

// OpenTarget returns the function the runner uses to open a plan's
// targets by name: the local machine, or a host over SSH as the target's
// ssh block (and ~/.ssh/config) says. warn receives what the user must be
// told on every run, such as host keys not being checked.
func OpenTarget(p *plans.Plan, s *plans.Scope, warn func(string)) func(name string) (targets.Target, error) {
	return func(name string) (targets.Target, error) {
		t := p.Target(name)
		if t == nil || t.SSH == nil {
			if name != "local" && t == nil {
				return nil, fmt.Errorf("the plan declares no target %q", name)
			}
			return targets.NewLocal(), nil
		}
		return nil, fmt.Errorf("ssh targets are not wired yet")
	}
}
