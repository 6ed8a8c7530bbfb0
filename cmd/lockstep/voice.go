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
)

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
