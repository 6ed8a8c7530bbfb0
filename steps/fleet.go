package steps

import (
	"fmt"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
)

// Fleet is what a step on a fleet (a target with ssh { hosts = [...] })
// says of its hosts: how many may fail, how many must confirm, and
// whether rank 0 goes first. On a single host these do nothing.
type Fleet struct {
	MaxFailures  Count `hcl:"max_failures" doc:"on a fleet: how many hosts may fail while the step still confirms" default:"0, or as many as min_confirmed leaves"`
	MinConfirmed Count `hcl:"min_confirmed" doc:"on a fleet: how many hosts must confirm for the step to confirm" default:"every host max_failures does not excuse"`
	LeaderFirst  Flag  `hcl:"leader_first,const" doc:"on a fleet: rank 0 runs first and must confirm before the other hosts start (a leader, a head node)" default:"false"`
}

// Count is a whole number of hosts, 0 or more; unset until given.
type Count struct {
	N   int
	Set bool
}

func (*Count) CtyType() cty.Type { return cty.Number }
func (c *Count) Show() string {
	if !c.Set {
		return ""
	}
	return strconv.Itoa(c.N)
}
func (c *Count) SetCty(v cty.Value) error {
	n, err := schema.WholeOf(v)
	if err != nil || n < 0 {
		return &schema.Invalid{Summary: "Invalid count", Err: fmt.Errorf("must be a whole number of hosts, 0 or more"), Whole: false}
	}
	c.N, c.Set = int(n), true
	return nil
}

// Allowed is how many of n hosts may fail with the step still
// confirming, and how many must confirm: max_failures and min_confirmed
// as given, the one left out made from the other, neither: none may
// fail.
func (f *Fleet) Allowed(n int) (maxFailures, minConfirmed int) {
	maxFailures, minConfirmed = 0, n
	switch {
	case f.MaxFailures.Set && f.MinConfirmed.Set:
		maxFailures, minConfirmed = f.MaxFailures.N, f.MinConfirmed.N
	case f.MaxFailures.Set:
		maxFailures, minConfirmed = f.MaxFailures.N, n-f.MaxFailures.N
	case f.MinConfirmed.Set:
		maxFailures, minConfirmed = n-f.MinConfirmed.N, f.MinConfirmed.N
	}
	return max(maxFailures, 0), max(minConfirmed, 0)
}

// Flag is a fleet's yes or no: unset (false) shows as nothing, so that
// the record of a step on one machine keeps no fleet attribute.
type Flag bool

func (*Flag) CtyType() cty.Type { return cty.Bool }
func (f *Flag) Show() string {
	if !*f {
		return ""
	}
	return "true"
}
func (f *Flag) SetCty(v cty.Value) error {
	v, _ = v.Unmark()
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return &schema.Invalid{Summary: "Invalid flag", Err: fmt.Errorf("must be true or false")}
	}
	*f = Flag(v.True())
	return nil
}
