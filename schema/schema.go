package schema

import "github.com/zclconf/go-cty/cty"

// Attr describes an attribute.
type Attr struct {
	Name     string
	Doc      string
	Default  string // as docs show it; "" when there is none
	Required bool
	Const    bool // must be a constant: no references to anything
	// Type is what the value must convert to; cty.NilType when the
	// attribute is checked on its own (target, step, type, default) and
	// cty.DynamicPseudoType when any value will do.
	Type cty.Type
}

// Output is a value a step or probe exposes to expressions.
type Output struct {
	Name string
	Type cty.Type // cty.DynamicPseudoType when it depends on the data
	Doc  string
}

// Better says which way a metric improves, so that a comparison of two
// attempts can call a change better or worse.
type Better int

const (
	// Neither: the metric describes the run (a count, a setting) rather
	// than how well it went.
	Neither Better = iota
	Higher
	Lower
)

func (b Better) String() string {
	switch b {
	case Higher:
		return "higher"
	case Lower:
		return "lower"
	}
	return "neither"
}

// Metric is a number a load or benchmark records, named in snake_case
// with its unit (latency_p99_ms, requests_per_s).
type Metric struct {
	Name   string
	Doc    string
	Better Better
}
