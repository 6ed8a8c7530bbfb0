package loads

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"
)

func TestPacers(t *testing.T) {
	c := Constant{Rate: 500}
	if got := c.Due(1000); got != 2*time.Second {
		t.Errorf("constant 500/s: arrival 1000 due at %v, want 2s", got)
	}
	// A ramp from 100/s to 300/s over 10 s has sent the integral of its
	// rate: 100*t + 10*t^2 by t, 2000 by 10 s; then 300/s.
	r := Ramp{From: 100, To: 300, Over: 10 * time.Second}
	for _, c := range []struct {
		i    int64
		want time.Duration
	}{{0, 0}, {110, time.Second}, {2000, 10 * time.Second}, {2300, 11 * time.Second}} {
		if got := r.Due(c.i); (got - c.want).Abs() > time.Microsecond {
			t.Errorf("ramp: arrival %d due at %v, want %v", c.i, got, c.want)
		}
	}
	for i := int64(1); i < 3000; i++ {
		if r.Due(i) <= r.Due(i-1) {
			t.Fatalf("ramp: arrival %d not after %d", i, i-1)
		}
	}
	// Poisson: the same seed, the same arrivals; the mean gap is 1/rate.
	a, b := &Poisson{Rate: 200, Seed: 3}, &Poisson{Rate: 200, Seed: 3}
	var last time.Duration
	const n = 20000
	for i := range int64(n) {
		da, db := a.Due(i), b.Due(i)
		if da != db {
			t.Fatalf("arrival %d: %v and %v for one seed", i, da, db)
		}
		last = da
	}
	if mean := last.Seconds() / n; math.Abs(mean-1.0/200) > 0.05/200 {
		t.Errorf("Poisson 200/s: mean gap %v s, want 0.005 within 5%%", mean)
	}
}

// BenchmarkPacingLateness runs the open model at 500 arrivals per second
// for 2 s with a hitter that does nothing, and reports how late the pacer
// handed each arrival on (p50 and p99, µs): "pacer" is the engine's wait
// (on Linux a nanosleep with 1 ns slack on a thread of its own, then a
// spin of the last 50 µs), "timer" a plain Go timer, as before.
func BenchmarkPacingLateness(b *testing.B) {
	for _, mode := range []string{"pacer", "timer"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				var late []time.Duration
				e := &engine[struct{}]{
					concurrency: 4, pacer: Constant{Rate: 500}, duration: 2 * time.Second,
					hit:            func(context.Context, int, int64, bool, time.Time) struct{} { return struct{}{} },
					record:         func(int, struct{}, time.Time, time.Time) bool { return false },
					pacingLateness: func(d time.Duration) { late = append(late, d) },
				}
				if mode == "timer" {
					e.wait = sleepUntilTimer
				}
				e.begin()
				e.run(context.Background())
				slices.Sort(late)
				b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50_µs")
				b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99_µs")
			}
		})
	}
}
