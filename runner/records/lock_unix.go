//go:build unix

package records

import (
	"errors"
	"os"
	"syscall"
)

// lockExclusive marks a record as being written. The kernel drops the lock
// when the process dies, however it dies.
func lockExclusive(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// beingWritten reports whether a live writer holds the record at path.
func beingWritten(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}
