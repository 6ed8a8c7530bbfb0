package steps

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// What the load kinds (load.go) read of their blocks' evaluated
// attributes, until they decode into typed configs with schema as the
// probes do.

func attrString(a map[string]cty.Value, name, def string) (string, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if !v.IsKnown() || v.Type() != cty.String {
		return "", fmt.Errorf("%s must be a string", name)
	}
	return v.AsString(), nil
}

func attrInt(a map[string]cty.Value, name string, def int) (int, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() == cty.String {
		n, err := strconv.Atoi(v.AsString())
		if err != nil {
			return 0, fmt.Errorf("%s must be a whole number, not %q", name, v.AsString())
		}
		return n, nil
	}
	if v.Type() != cty.Number {
		return 0, fmt.Errorf("%s must be a number", name)
	}
	f, _ := v.AsBigFloat().Float64()
	return int(f), nil
}

func attrFloat(a map[string]cty.Value, name string, def float64) (float64, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() != cty.Number {
		return 0, fmt.Errorf("%s must be a number", name)
	}
	f, _ := v.AsBigFloat().Float64()
	return f, nil
}

func attrBool(a map[string]cty.Value, name string, def bool) (bool, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return def, nil
	}
	if v.Type() != cty.Bool {
		return false, fmt.Errorf("%s must be true or false", name)
	}
	return v.True(), nil
}

func attrDuration(a map[string]cty.Value, name string, def time.Duration) (time.Duration, error) {
	s, err := attrString(a, name, "")
	if err != nil || s == "" {
		return def, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

func attrStringMap(a map[string]cty.Value, name string) (map[string]string, error) {
	v, ok := a[name]
	if !ok || v.IsNull() {
		return nil, nil
	}
	if !v.CanIterateElements() {
		return nil, fmt.Errorf("%s must be a map of strings", name)
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if k.Type() != cty.String {
			return nil, fmt.Errorf("%s must be a map of strings", name)
		}
		s, err := toText(e)
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %w", name, k.AsString(), err)
		}
		out[k.AsString()] = s
	}
	return out, nil
}

// toText renders a primitive as a string the way HCL converts it.
func toText(v cty.Value) (string, error) {
	if v.IsNull() {
		return "", nil
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), nil
	case cty.Number:
		return v.AsBigFloat().Text('f', -1), nil
	case cty.Bool:
		return strconv.FormatBool(v.True()), nil
	}
	return "", fmt.Errorf("must be a string, number or bool")
}

// ToJSON renders a plan value as JSON, for request bodies.
func ToJSON(v cty.Value) ([]byte, error) {
	return ctyjson.Marshal(v, v.Type())
}
