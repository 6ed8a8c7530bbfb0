package plans

import (
	"lockstep/loads"
	"lockstep/schema"
)

// loadKinds describes the load kinds, derived from their registry: each
// kind's attributes from its config struct, its metrics from its metrics
// struct.
func loadKinds() []LoadKind {
	var out []LoadKind
	for _, k := range loads.Kinds() {
		out = append(out, LoadKind{
			Name: k.Name, Doc: k.Doc,
			Attrs:    schema.Attrs(k.Defaults()),
			Metrics:  k.Metrics,
			Defaults: k.Defaults,
		})
	}
	return out
}

// MetricNames are the names of the metrics the kind reports, in order.
func (k *LoadKind) MetricNames() []string {
	names := make([]string, len(k.Metrics))
	for i, m := range k.Metrics {
		names[i] = m.Name
	}
	return names
}

// LoadSummary is what explain says of load l beyond its attributes as
// written: its kind's summary (model, limits) of the config the run would
// decode from them, defaults included; "" when a value is sensitive or
// known only once the run observes it, as ProbeSummary. s may be nil.
func (l *Schema) LoadSummary(ld *Load, s *Scope) string {
	k := l.LoadKind(ld.Kind)
	if k == nil || k.Defaults == nil {
		return ""
	}
	return summaryOf(ld.Attrs, s, k.Defaults(), nil)
}
