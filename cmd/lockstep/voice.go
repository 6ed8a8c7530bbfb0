package main

import (
	"fmt"
	"io"
)

// lockstep's voice, written once: messages go to stderr, start with
// "lockstep: ", are lower-case, and a hint on its own line says what to
// do next when there is something useful to say.

// Exit codes, shared by every command.
const (
	exitOK      = 0 // done; a plan confirmed; nothing to change
	exitFailed  = 1 // a step failed; fmt -check found files to change
	exitUsage   = 2 // bad flags or arguments, or an invalid plan
	exitInvalid = 2
	// exitLost: a run's record, or a report it was asked for, could not
	// be written in full (a full disk, a lost permission): its verdict is
	// not kept, whatever it was. A signal that ends a run exits
	// 128 + the signal's number (see endings).
	exitLost = 3
)

// Records and reports hold commands, hosts and log lines: owner-only.
const reportPerm = 0o600

// errorf prints one error line in lockstep's voice.
func errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "lockstep: "+format+"\n", args...)
}

// hintf prints a hint under an error.
func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "lockstep: hint: "+format+"\n", args...)
}

// usageError reports a usage mistake and returns exitUsage.
func usageError(w io.Writer, msg, hint string) int {
	errorf(w, "%s", msg)
	if hint != "" {
		hintf(w, "%s", hint)
	}
	return exitUsage
}
