package runner

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"lockstep/runner/events"
)

// benchmark runs the step's load or command and keeps its metrics.
func (s *stepRun) benchmark(ctx, outer context.Context) (events.Outcome, bool) {
	return s.errored(errNotYetBuilt), true
}

// metricsValue is self.metrics: NAME -> number, or for a repeated
// command NAME -> {values, median, min, max, stddev}.
func metricsValue(m map[string]float64, stats map[string]events.MetricStats) cty.Value {
	out := map[string]cty.Value{}
	for k, v := range m {
		out[k] = cty.NumberFloatVal(v)
	}
	for k, st := range stats {
		vals := make([]cty.Value, len(st.Values))
		for i, v := range st.Values {
			vals[i] = cty.NumberFloatVal(v)
		}
		list := cty.ListValEmpty(cty.Number)
		if len(vals) > 0 {
			list = cty.ListVal(vals)
		}
		out[k] = cty.ObjectVal(map[string]cty.Value{
			"values": list,
			"median": cty.NumberFloatVal(st.Median),
			"min":    cty.NumberFloatVal(st.Min),
			"max":    cty.NumberFloatVal(st.Max),
			"stddev": cty.NumberFloatVal(st.Stddev),
		})
	}
	return cty.ObjectVal(out)
}
