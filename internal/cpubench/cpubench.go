// Package cpubench reports the CPU time a benchmark used beside the wall
// time go test reports: on a machine shared with other work (this
// project's 2 cores) the wall time moves with the neighbours, the CPU
// time far less. Only benchmarks import it.
package cpubench

import (
	"testing"
	"time"
)

// Mark is the CPU times of this process and of its children (those
// waited for) at a point; ok is false where they are not measured.
type Mark struct {
	self, children time.Duration
	ok             bool
}

// Now marks the CPU times now.
func Now() Mark { return now() }

// Since is the CPU time this process and its children used since m.
func (m Mark) Since() (self, children time.Duration, ok bool) {
	n := now()
	return n.self - m.self, n.children - m.children, m.ok && n.ok
}

// ReportPerOp reports this process's CPU time since m per iteration of
// b's loop, as cpu-ns/op.
func (m Mark) ReportPerOp(b *testing.B) {
	if self, _, ok := m.Since(); ok && b.N > 0 {
		b.ReportMetric(float64(self)/float64(b.N), "cpu-ns/op")
	}
}
