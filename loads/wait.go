package loads

import "time"

// sleepUntilTimer waits until t on a Go timer; false when stop is closed
// first.
func sleepUntilTimer(t time.Time, stop <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-stop:
		return false
	case <-tm.C:
		return true
	}
}
