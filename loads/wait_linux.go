package loads

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spinFor is the last stretch before a due time that the pacer spins
// through instead of sleeping: the kernel wakes a sleeper tens of
// microseconds late on a busy machine.
const spinFor = 50 * time.Microsecond

// pacerThread puts the calling goroutine on an OS thread of its own whose
// sleeps the kernel ends on time (timer slack 1 ns, not the default
// 50 µs), and returns the function that undoes it. Go's own timers wake
// late by up to a millisecond on Linux (the runtime's poller waits in
// whole milliseconds), which would delay every arrival of an open model.
//
// Under testing/synctest the clock is a bubble's and stands still while
// goroutines run: a kernel sleep does not move it, and the pacer waits on
// Go timers there instead (wait is then sleepUntilTimer).
func pacerThread() (wait func(t time.Time, stop <-chan struct{}) bool, done func()) {
	before := time.Now()
	ts := unix.NsecToTimespec(int64(time.Microsecond))
	_ = unix.Nanosleep(&ts, nil)
	if !time.Now().After(before) {
		return sleepUntilTimer, func() {}
	}
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // best effort: the default slack only costs precision
	return sleepUntil, runtime.UnlockOSThread
}

// sleepUntil waits until t: a nanosleep on the pacer's thread to spinFor
// before t, then a spin. A wait shorter than twice spinFor (arrivals
// denser than 10,000 a second) sleeps all the way instead: spinning
// through every gap would take a core from the load. It returns early,
// false, when stop is closed; a sleep is cut into slices of at most
// 10 ms so that a stop is seen.
func sleepUntil(t time.Time, stop <-chan struct{}) bool {
	spin := time.Until(t) >= 2*spinFor
	for {
		select {
		case <-stop:
			return false
		default:
		}
		d := time.Until(t)
		if spin {
			d -= spinFor
		}
		if d <= 0 {
			break
		}
		ts := unix.NsecToTimespec(int64(min(d, 10*time.Millisecond)))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
	}
	for spin && time.Now().Before(t) {
	}
	return true
}
