// Package events is the vocabulary the runner speaks while it works. The
// runner never prints: it emits events to an Observer, and views (live
// terminal, plain lines, JSON lines) and the attempt record are observers.
// Every value that came from a sensitive variable is already redacted when
// it reaches an event.
//
// Start reading at Event and its Type, then Outcome.
package events
