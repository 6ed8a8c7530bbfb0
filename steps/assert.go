package steps

import (
	"context"
	"time"

	"github.com/hashicorp/hcl/v2"

	"lockstep/runner/events"
)

// AssertConfig is an assert step: no action; its probes and conditions
// are evaluated once, or until its timeout when it has one.
type AssertConfig struct {
	Common
}

func assertKind() Kind {
	return Kind{
		Name: "assert", Doc: "takes no action: evaluates its probes and conditions once, or until timeout when one is given",
		// No timeout: a single evaluation.
		Defaults: func() Config { return &AssertConfig{Common: common(0, time.Second)} },
		Refusals: noCommand("assert"),
		Explain:  Explain{NoAction: "none: checks its probes and conditions"},
	}
}

func (*AssertConfig) Check() error { return nil }

func (*AssertConfig) Static(s Shape) hcl.Diagnostics {
	return needsPostcondition("An assert checks its postconditions; without one it asserts nothing.", s)
}

func (*AssertConfig) ConfirmsFor(Shape) []string { return nil }

// Once: an assert without a timeout checks a single time.
func (c *AssertConfig) Once() bool                           { return c.Timeout == 0 }
func (*AssertConfig) Conditions(Observed) []events.Condition { return nil }
func (*AssertConfig) Act(context.Context, Env) error         { return nil }
