package loads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MetricSpec says how to read one number from a command's output: Regex
// (its first capture group, or the whole match when it has none) or JSON
// (a JSONPath: "results[0].tps", "$.results.tps", "[0].x"). Exactly one of them is set.
type MetricSpec struct {
	Name, Regex, JSON string
}

// Extract reads every spec's number from output. It returns the metrics it
// could read, and an error naming each one it could not.
//
// A JSON spec reads the whole output as a JSON document or, failing that,
// its last line that is one (tools often log before printing a result).
func Extract(output []byte, specs []MetricSpec) (map[string]float64, error) {
	m := make(map[string]float64, len(specs))
	var errs []error
	var doc any
	var docErr error
	docRead := false
	for _, s := range specs {
		var v float64
		var err error
		switch {
		case s.Regex != "" && s.JSON != "":
			err = errors.New("has both regex and json; give one")
		case s.Regex != "":
			v, err = extractRegex(output, s.Regex)
		case s.JSON != "":
			if !docRead {
				doc, docErr = parseJSONOutput(output)
				docRead = true
			}
			if docErr != nil {
				err = docErr
				break
			}
			v, err = extractJSON(doc, s.JSON)
		default:
			err = errors.New("needs a regex or a json path")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("metric %q: %w", s.Name, err))
			continue
		}
		m[s.Name] = v
	}
	return m, errors.Join(errs...)
}

func extractRegex(output []byte, expr string) (float64, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return 0, fmt.Errorf("regex: %w", err)
	}
	match := re.FindSubmatch(output)
	if match == nil {
		return 0, fmt.Errorf("regex %q matched nothing in the output", expr)
	}
	text := match[0]
	if len(match) > 1 {
		text = match[1]
	}
	v, err := parseNumber(string(text))
	if err != nil {
		return 0, fmt.Errorf("regex %q matched %q: %w", expr, text, err)
	}
	return v, nil
}

func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return v, nil
}

func parseJSONOutput(output []byte) (any, error) {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if d.More() {
			return nil, errors.New("more than one JSON value")
		}
		return v, nil
	}
	v, err := decode(output)
	if err == nil {
		return v, nil
	}
	lines := bytes.Split(bytes.TrimSpace(output), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) > 0 && (l[0] == '{' || l[0] == '[') {
			if v, lerr := decode(l); lerr == nil {
				return v, nil
			}
		}
	}
	return nil, fmt.Errorf("output is not JSON: %w", err)
}

// Stats summarizes the values of a metric over repeated runs. Stddev is the
// sample standard deviation (n-1), 0 for fewer than two values.
type Stats struct {
	Values                   []float64
	Median, Min, Max, Stddev float64
}

// Summarize computes Stats; Values keeps the runs' order.
func Summarize(values []float64) Stats {
	s := Stats{Values: slices.Clone(values)}
	if len(values) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(values))
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Median = percentile(sorted, 50)
	if len(values) > 1 {
		mean := sum(values) / float64(len(values))
		var ss float64
		for _, v := range values {
			ss += (v - mean) * (v - mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(values)-1))
	}
	return s
}

// percentile of sorted values with linear interpolation between closest
// ranks, as numpy.percentile does by default (bench_serving's p99).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}
