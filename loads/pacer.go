package loads

import (
	"math"
	"math/rand/v2"
	"time"
)

// A Pacer says when the arrivals of an open model are due. Due(i) is the
// offset from the start of the load at which arrival i (0, 1, 2, ...) is
// due; calls come in order of i, once each, so a pacer may keep state.
// The engine sends arrival i at Due(i) whatever the server does, and
// times it from then (see engine).
//
// The pacers and their equations, with r the rate in arrivals per second:
//
//   - Constant{r}: arrivals evenly spaced, Due(i) = i / r.
//   - Poisson{r, seed}: the gaps are independent and exponential with
//     mean 1/r (a Poisson process, as bench_serving's --request-rate):
//     Due(i) = Due(i-1) + E_i / r, E_i ~ Exp(1), Due(0) = 0.
//   - Ramp{r0, r1, T}: the rate grows linearly from r0 to r1 over T, then
//     stays at r1: rate(t) = r0 + a t with a = (r1 - r0) / T. The arrivals
//     by t are its integral, hits(t) = r0 t + a t^2 / 2, and arrival i is
//     due when hits(t) = i: t = (sqrt(r0^2 + 2 a i) - r0) / a (t = i / r0
//     when a = 0). Past T, Due(i) = T + (i - hits(T)) / r1.
type Pacer interface {
	Due(i int64) time.Duration
}

// Constant is arrivals evenly spaced at Rate per second.
type Constant struct{ Rate float64 }

func (c Constant) Due(i int64) time.Duration { return seconds(float64(i) / c.Rate) }

// Poisson is a Poisson process of Rate arrivals per second, the same for
// the same Seed.
type Poisson struct {
	Rate float64
	Seed int64

	rng  *rand.Rand
	next float64 // Due of the next arrival, in seconds
}

func (p *Poisson) Due(int64) time.Duration {
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(uint64(p.Seed), 1))
	}
	d := p.next
	p.next += p.rng.ExpFloat64() / p.Rate
	return seconds(d)
}

// Ramp is a rate growing linearly from From to To per second over Over,
// then staying at To.
type Ramp struct {
	From, To float64
	Over     time.Duration
}

func (r Ramp) Due(i int64) time.Duration { return r.at(float64(i)) }

// at is when the ramp has sent n arrivals, n not necessarily whole.
func (r Ramp) at(n float64) time.Duration {
	T := r.Over.Seconds()
	if T <= 0 {
		return seconds(n / r.To)
	}
	a := (r.To - r.From) / T
	atT := r.From*T + a*T*T/2
	if n >= atT {
		return seconds(T + (n-atT)/r.To)
	}
	if a == 0 {
		return seconds(n / r.From)
	}
	return seconds((math.Sqrt(r.From*r.From+2*a*n) - r.From) / a)
}

// RampedPoisson is a Poisson process whose rate follows a Ramp: the
// arrivals of a unit-rate Poisson process (seeded by Seed), each taken as
// the count of arrivals the ramp has sent by its time, so that the gaps
// are exponential about the ramp's rate at every moment (a
// time-changed Poisson process).
type RampedPoisson struct {
	Ramp Ramp
	Seed int64

	unit Poisson
}

func (p *RampedPoisson) Due(i int64) time.Duration {
	if p.unit.Rate == 0 {
		p.unit = Poisson{Rate: 1, Seed: p.Seed}
	}
	return p.Ramp.at(p.unit.Due(i).Seconds())
}

// ramped is p reached by a linear ramp from 0 over d: arrivals at the
// ramp's rate until d, then p's rate (d 0: p as it is).
func ramped(p Pacer, d time.Duration) Pacer {
	if d <= 0 {
		return p
	}
	switch p := p.(type) {
	case Constant:
		return Ramp{To: p.Rate, Over: d}
	case *Poisson:
		return &RampedPoisson{Ramp: Ramp{To: p.Rate, Over: d}, Seed: p.Seed}
	}
	return p
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
