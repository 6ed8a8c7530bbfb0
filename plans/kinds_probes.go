package plans

import (
	"maps"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/probes"
	"lockstep/schema"
)

// probeKinds describes the probe kinds, derived from their registry: each
// kind's attributes from its config struct, with its defaults.
func probeKinds() []ProbeKind {
	ks := probes.Kinds()
	out := make([]ProbeKind, len(ks))
	for i, k := range ks {
		out[i] = ProbeKind{Name: k.Name, Doc: k.Doc, Attrs: schema.Attrs(k.Defaults()), Outputs: k.Outputs, OneOf: k.OneOf, Defaults: k.Defaults}
	}
	return out
}

// ProbeValues is vals, a probe block's evaluated attributes, with its
// step and since references as the addresses of the launches they name:
// what its config is decoded from, in validate and in the run.
func ProbeValues(p *Probe, vals map[string]cty.Value) map[string]cty.Value {
	out := make(map[string]cty.Value, len(vals)+2)
	maps.Copy(out, vals)
	if p.Step != "" {
		out["step"] = cty.StringVal(p.Step)
	}
	if p.Since != "" {
		out["since"] = cty.StringVal(p.Since)
	}
	return out
}

// ProbeSummary is what explain says of probe p beyond its attributes as
// written: its kind's summary of the config the run would decode from
// them, defaults included. It is "" when the kind has nothing to add, and
// when a value is sensitive or known only once the run observes it: the
// summary would guess. s may be nil: then only constants are known.
func (l *Schema) ProbeSummary(p *Probe, s *Scope) string {
	k := l.ProbeKind(p.Kind)
	if k == nil || k.Defaults == nil {
		return ""
	}
	return summaryOf(p.Attrs, s, k.Defaults(), func(vals map[string]cty.Value) map[string]cty.Value { return ProbeValues(p, vals) })
}

// summaryOf is what explain adds of a block beyond its attributes: cfg
// (its kind's defaults) decoded from attrs with the run's decoder, as
// cfg's Summary. attrs are evaluated in s (nil: constants only), and
// values, when given, turns them into what the kind decodes. "" when a
// value is sensitive or known only once the run observes it (the summary
// would guess), or does not decode.
func summaryOf(attrs map[string]hcl.Expression, s *Scope, cfg interface{ Summary() string }, values func(map[string]cty.Value) map[string]cty.Value) string {
	var ctx *hcl.EvalContext
	if s != nil {
		ctx = s.EvalContext(nil)
	}
	vals := map[string]cty.Value{}
	for name, e := range attrs {
		v, diags := e.Value(ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() || IsSensitive(v) {
			return ""
		}
		vals[name] = v
	}
	if values != nil {
		vals = values(vals)
	}
	if err := schema.DecodeChecked(vals, cfg); err != nil {
		return ""
	}
	return cfg.Summary()
}
