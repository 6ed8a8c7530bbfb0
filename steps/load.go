package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
)

// Load is a configured load generator, ready to run against a target.
type Load interface {
	Run(ctx context.Context, dial loads.Dialer, progress func(loads.Progress)) (loads.Result, error)
}

// NewLoad builds the load a `load "KIND"` block describes.
func NewLoad(kind string, a map[string]cty.Value) (Load, error) {
	var errs []error
	str := func(name, def string) string {
		s, err := attrString(a, name, def)
		if err != nil {
			errs = append(errs, err)
		}
		return s
	}
	num := func(name string, def int) int {
		n, err := attrInt(a, name, def)
		if err != nil {
			errs = append(errs, err)
		}
		return n
	}
	flt := func(name string) float64 {
		f, err := attrFloat(a, name, 0)
		if err != nil {
			errs = append(errs, err)
		}
		return f
	}
	headers, err := attrStringMap(a, "headers")
	if err != nil {
		errs = append(errs, err)
	}
	dur := func(name string) time.Duration {
		d, err := attrDuration(a, name, 0)
		if err != nil {
			errs = append(errs, err)
		}
		return d
	}
	var l Load
	switch kind {
	case "http":
		h := loads.HTTP{
			URL:         str("url", ""),
			Method:      str("method", ""),
			Headers:     headers,
			Body:        []byte(str("body", "")),
			Concurrency: num("concurrency", 0),
			Rate:        flt("rate"),
			Duration:    dur("duration"),
			Requests:    num("requests", 0),
			Warmup:      dur("warmup"),
			Timeout:     dur("timeout"),
		}
		l = h
	case "openai":
		o, err := newOpenAILoad(a, str, num, flt, dur, headers)
		if err != nil {
			errs = append(errs, err)
		}
		l = o
	default:
		return nil, fmt.Errorf("no load kind %q", kind)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load %q: %w", kind, errs[0])
	}
	return l, nil
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
