package steps

import (
	"context"
	"time"

	"github.com/hashicorp/hcl/v2"

	"lockstep/runner/events"
)

// WaitConfig is a wait step: no action; its probes are polled until the
// postconditions hold.
type WaitConfig struct {
	Common
}

func waitKind() Kind {
	return Kind{
		Name: "wait", Doc: "takes no action: polls its probes until the postconditions hold",
		Defaults: func() Config { return &WaitConfig{Common: common(5*time.Minute, time.Second)} },
		Refusals: noCommand("wait"),
		Explain:  Explain{NoAction: "none: polls its probes and conditions"},
	}
}

func (*WaitConfig) Check() error { return nil }

func (*WaitConfig) Static(s Shape) hcl.Diagnostics {
	return needsPostcondition("A wait polls until its postconditions hold; without one it has nothing to wait for.", s)
}

// needsPostcondition is the check of a kind that takes no action: its
// postconditions are all it does.
func needsPostcondition(what string, s Shape) hcl.Diagnostics {
	if s.Has("postcondition") {
		return nil
	}
	return hcl.Diagnostics{problem("Missing postcondition", what+" Add postcondition { condition = ... }.", s.Decl)}
}

func (*WaitConfig) ConfirmsFor(Shape) []string             { return nil }
func (*WaitConfig) Once() bool                             { return false }
func (*WaitConfig) Conditions(Observed) []events.Condition { return nil }
func (*WaitConfig) Act(context.Context, Env) error         { return nil }
