package schema

import (
	"fmt"
	"reflect"
)

// Metrics derives the metrics a kind records from its metrics struct's
// field tags, in field order:
//
//	RequestsPerS float64  `metric:"requests_per_s" doc:"successful responses per second" better:"higher"`
//	Dropped      float64  `metric:"dropped" doc:"arrivals dropped" better:"lower"`
//	Latency      Quantile `metric:"latency" doc:"latency of successful requests" better:"lower"`
//
// metric names it; better is higher, lower or absent (neither); a
// *float64 field is a metric that may be absent from a result (nil). A
// field of struct type is a group: its fields' names are prefixed with
// the group's and an underscore, its doc is the group's doc, a comma and
// the field's, and a field without better takes the group's. A struct
// whose tags are wrong is a programming error: Metrics panics.
func Metrics(m any) []Metric {
	t := reflect.TypeOf(m)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Metric
	walkMetrics(t, "", "", Neither, func(_ []int, mt Metric) { out = append(out, mt) }, nil)
	return out
}

// MetricValues is a metrics struct's values keyed by metric name; nil
// fields are left out.
func MetricValues(m any) map[string]float64 {
	v := reflect.Indirect(reflect.ValueOf(m))
	out := map[string]float64{}
	walkMetrics(v.Type(), "", "", Neither, func(index []int, mt Metric) {
		f := v.FieldByIndex(index)
		switch f.Kind() {
		case reflect.Float64:
			out[mt.Name] = f.Float()
		case reflect.Pointer:
			if !f.IsNil() {
				out[mt.Name] = f.Elem().Float()
			}
		}
	}, nil)
	return out
}

func walkMetrics(t reflect.Type, prefix, doc string, better Better, fn func([]int, Metric), index []int) {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("schema: metrics %s is not a struct", t))
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("metric")
		if !ok {
			continue
		}
		idx := append(append([]int(nil), index...), i)
		mt := Metric{Name: prefix + name, Doc: f.Tag.Get("doc"), Better: better}
		if doc != "" {
			mt.Doc = doc + ", " + mt.Doc
		}
		switch b := f.Tag.Get("better"); b {
		case "":
		case "higher":
			mt.Better = Higher
		case "lower":
			mt.Better = Lower
		case "neither":
			mt.Better = Neither
		default:
			panic(fmt.Sprintf("schema: %s.%s: better %q is not higher, lower or neither", t, f.Name, b))
		}
		switch {
		case f.Type.Kind() == reflect.Struct:
			walkMetrics(f.Type, mt.Name+"_", mt.Doc, mt.Better, fn, idx)
		case f.Type.Kind() == reflect.Float64,
			f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Float64:
			fn(idx, mt)
		default:
			panic(fmt.Sprintf("schema: %s.%s: a metric is a float64 or *float64, not %s", t, f.Name, f.Type))
		}
	}
}
