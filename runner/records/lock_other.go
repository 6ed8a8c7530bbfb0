//go:build !unix

package records

import "os"

// Without flock a record without attempt_finished always reads as
// interrupted, even while its run goes on.
func lockExclusive(*os.File) error { return nil }

func beingWritten(string) bool { return false }
