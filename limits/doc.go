// Package limits holds the bounds a plan, its inputs and what evaluating
// them computes keep to, the error that says one was exceeded, and the
// checks that need nothing of the plan language (JSON read into a value).
// plans applies them to plans; the probes and loads apply them to what
// they read, without importing plans.
//
// Start reading at the constants, then Error.
package limits
