package loads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"lockstep/schema"
)

// MaxLevels is how many levels a sweep may list, and how many a goodput
// search may probe.
const MaxLevels = 64

// Levels is a load's concurrency or rate as a plan writes it: one
// number, or a list of them, a sweep (concurrency = [1, 8, 64, 256]),
// whose levels run in turn against the same server (RunLevels).
type Levels []float64

func (*Levels) CtyType() cty.Type { return cty.DynamicPseudoType }

// Show is the level as written: 8, or [1, 8, 64] for a sweep.
func (l *Levels) Show() string {
	switch len(*l) {
	case 0:
		return ""
	case 1:
		return strconv.FormatFloat((*l)[0], 'f', -1, 64)
	}
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (l *Levels) SetCty(v cty.Value) error {
	t := v.Type()
	if !t.IsListType() && !t.IsTupleType() && !t.IsSetType() {
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return fmt.Errorf("must be a number, or a list of numbers for a sweep (such as [1, 8, 64]), not %s", t.FriendlyName())
		}
		f, _ := n.AsBigFloat().Float64()
		*l = Levels{f}
		return nil
	}
	if n := v.LengthInt(); n == 0 || n > MaxLevels {
		return fmt.Errorf("a sweep lists from 1 to %d levels, not %d", MaxLevels, n)
	}
	out := make(Levels, 0, v.LengthInt())
	for _, e := range v.AsValueSlice() {
		n, err := convert.Convert(e, cty.Number)
		if err != nil || n.IsNull() {
			return fmt.Errorf("a sweep is a list of numbers, such as [1, 8, 64]; it holds %s", e.Type().FriendlyName())
		}
		f, _ := n.AsBigFloat().Float64()
		out = append(out, f)
	}
	*l = out
	return nil
}

// Level is one level a load runs at: its concurrency and its rate (0:
// the closed model).
type Level struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
}

func (l Level) String() string {
	if l.Rate > 0 {
		return fmt.Sprintf("rate %v/s", l.Rate)
	}
	return fmt.Sprintf("concurrency %d", l.Concurrency)
}

// sweep is what both load kinds share of their levels: the concurrency
// and rate a plan wrote (one level or a sweep), and the level Run runs.
// Concurrency and Rate are that level for a Go caller; a plan's
// attributes go to Concurrencies and Rates, and a single value there is
// the level (resolved).
type sweep struct {
	concurrency *int
	rate        *float64
	lists       [2]*Levels // concurrency, rate
	search      *float64   // a goodput search's target, if the kind has one
}

// check checks what decoding cannot: each level of a sweep is a whole
// concurrency of at least 1 or a finite positive rate (a single value is
// checked as a Go caller's, by checkModel), and one of the two is swept.
func (s sweep) check() []error {
	var errs []error
	for i, l := range *s.lists[0] {
		switch {
		case l != math.Trunc(l) || math.IsInf(l, 0):
			errs = append(errs, &schema.AttrError{Attr: "concurrency", Err: fmt.Errorf("must be a whole number, not %v%s", l, levelName(s.lists[0], i))})
		case len(*s.lists[0]) > 1 && (l < 1 || l > math.MaxInt32):
			errs = append(errs, &schema.AttrError{Attr: "concurrency", Err: fmt.Errorf("must be at least 1, not %v%s", l, levelName(s.lists[0], i))})
		}
	}
	if len(*s.lists[1]) > 1 {
		for i, l := range *s.lists[1] {
			if !(l > 0) || math.IsInf(l, 0) {
				errs = append(errs, &schema.AttrError{Attr: "rate", Err: fmt.Errorf("%v: must be a positive number of requests per second%s", l, levelName(s.lists[1], i))})
			}
		}
	}
	if len(*s.lists[0]) > 1 && len(*s.lists[1]) > 1 {
		errs = append(errs, &schema.AttrError{Attr: "rate", Err: errors.New("and concurrency are both lists: a sweep varies one of them; keep the other one number")})
	}
	return errs
}

// levelName says which level of a sweep a value is: "" for one value.
func levelName(l *Levels, i int) string {
	if len(*l) == 1 {
		return ""
	}
	return fmt.Sprintf(" (level %d of %s)", i+1, l.Show())
}

// resolve sets the one level Run runs from a single-valued list.
func (s sweep) resolve() {
	if c := *s.lists[0]; len(c) == 1 {
		*s.concurrency = int(c[0])
	}
	if r := *s.lists[1]; len(r) == 1 {
		*s.rate = r[0]
	}
}

// levels are the levels to run, in order: each of the swept list's, the
// other attribute as it is.
func (s sweep) levels() []Level {
	base := Level{Concurrency: *s.concurrency, Rate: *s.rate}
	if c := *s.lists[0]; len(c) > 1 {
		out := make([]Level, len(c))
		for i, v := range c {
			out[i] = base
			out[i].Concurrency = int(v)
		}
		return out
	}
	if r := *s.lists[1]; len(r) > 1 {
		out := make([]Level, len(r))
		for i, v := range r {
			out[i] = base
			out[i].Rate = v
		}
		return out
	}
	return []Level{base}
}

// set makes the config run level l alone.
func (s sweep) set(l Level) {
	*s.concurrency, *s.rate = l.Concurrency, l.Rate
	if s.search != nil {
		*s.search = 0 // a probe of a search is one level
	}
	*s.lists[0], *s.lists[1] = Levels{float64(l.Concurrency)}, nil
	if l.Rate > 0 {
		*s.lists[1] = Levels{l.Rate}
	}
}

// errSweep is Run called on a sweep: RunLevels runs one.
var errSweep = errors.New("concurrency or rate lists a sweep: run it with RunLevels, level by level")

// LevelResult is what one level of a sweep or search observed.
type LevelResult struct {
	Level  Level
	Result Result
	// Good, in a goodput search: the level's goodput share held the target.
	Good *bool
}

// Levelled is what RunLevels ran: each level in order, the best of them
// (its kind's throughput, or the highest rate a search found good; -1
// when none), and the metrics of the whole (max_goodput_rate).
type Levelled struct {
	Levels  []LevelResult
	Best    int
	Metrics map[string]float64
	Notes   map[string]string
}

// A swept config runs at levels: the levels its attributes list, or for
// a goodput search the levels its bisection chooses.
type swept interface {
	Config
	sweepOf() sweep
	// throughput is the metric a sweep's best level has most of.
	throughput() string
}

// Swept says whether cfg runs at several levels: a sweep, or a goodput
// search (RunLevels runs it; Run refuses it).
func Swept(cfg Config) bool {
	s, ok := cfg.(swept)
	if !ok {
		return false
	}
	if o, ok := cfg.(*OpenAI); ok && o.GoodputTarget > 0 {
		return true
	}
	return len(s.sweepOf().levels()) > 1
}

// LevelProgress is Progress of one level of a sweep or a search.
type LevelProgress struct {
	Progress
	Index int // the level's place in the run, from 0
	Level Level
}

// RunLevels runs cfg: each of its levels in turn against the same
// server, each with its own warm-up and ramp, or the probes of its
// goodput search (OpenAI.GoodputTarget). done, if not nil, is told each
// level's result as it ends. When ctx ends or a level fails, RunLevels
// returns the levels that ended and the error (the cut-short level's
// partial result last, with ctx's error).
func RunLevels(ctx context.Context, cfg Config, dial Dialer, progress func(LevelProgress), done func(LevelResult)) (Levelled, error) {
	s, ok := cfg.(swept)
	if !ok {
		return Levelled{}, fmt.Errorf("load %T has no levels", cfg)
	}
	out := Levelled{Best: -1}
	run := func(i int, l Level) (LevelResult, error) {
		one := s.Resolved().(swept)
		one.sweepOf().set(l)
		var pf func(Progress)
		if progress != nil {
			pf = func(p Progress) { progress(LevelProgress{Progress: p, Index: i, Level: l}) }
		}
		res, err := one.Run(ctx, dial, pf)
		for j := range res.Requests {
			res.Requests[j].Level = i
		}
		lr := LevelResult{Level: l, Result: res}
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("level %d (%s): %w", i+1, l, err)
		}
		return lr, err
	}
	keep := func(lr LevelResult) {
		out.Levels = append(out.Levels, lr)
		if done != nil {
			done(lr)
		}
	}
	if g, ok := cfg.(*OpenAI); ok && g.GoodputTarget > 0 {
		err := searchGoodput(ctx, g, run, keep, &out)
		return out, err
	}
	key := s.throughput()
	// The levels of the config as it runs: the attribute not swept is a
	// plan's single value (Concurrencies, Rates), resolved into its level.
	for i, l := range s.Resolved().(swept).sweepOf().levels() {
		lr, err := run(i, l)
		if err != nil {
			if ctx.Err() != nil && len(lr.Result.Metrics) > 0 {
				out.Levels = append(out.Levels, lr)
			}
			return out, err
		}
		keep(lr)
		if out.Best < 0 || lr.Result.Metrics[key] > out.Levels[out.Best].Result.Metrics[key] {
			out.Best = len(out.Levels) - 1
		}
	}
	return out, nil
}
