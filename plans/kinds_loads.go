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
			Defaults: func() any { return k.Defaults() },
		})
	}
	return out
}
