// Package terminal makes text that the world wrote (a server's log line,
// a value a probe read) safe to show as one line of lockstep's output, in
// the run views and in the reports read back from records alike.
//
// Start reading at Printable.
package terminal
