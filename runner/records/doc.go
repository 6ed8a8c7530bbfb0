// Package records keeps every `lockstep run` as an attempt: a directory
// .lockstep/attempts/PLAN/N/ holding the events the runner emitted as JSON
// lines (events.jsonl) and a copy of the plan (plan.hcl). The record is
// written as the run goes, so a run killed with SIGKILL still leaves a
// readable record; one that ends without attempt_finished reads as
// interrupted, in the step it was in.
//
// Start reading at Open (the Writer, an events.Observer the runner emits
// to), then Load and List (a record read back into an Attempt), then what
// is read out of attempts as data: Tables (attempts side by side, also the
// matrix table), MetricsOf and KeyMetrics, and Compare (what changed
// between two). records formats nothing: package views renders these.
package records
