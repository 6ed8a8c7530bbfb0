//go:build !linux

package loads

import "time"

func pacerThread() (wait func(t time.Time, stop <-chan struct{}) bool, done func()) {
	return sleepUntilTimer, func() {}
}
