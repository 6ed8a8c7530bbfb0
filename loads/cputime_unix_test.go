//go:build unix

package loads

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used, its GC's
// included: on a machine shared with other work it moves far less than
// the wall time a benchmark reports.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
