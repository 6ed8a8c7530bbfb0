// Package steps holds the step kinds: run, launch, wait, assert and
// benchmark, one file each. A kind's file has its config struct (the
// attributes, their docs and types in field tags, which schema reads),
// the function giving its defaults (the one place a default is
// declared), its self outputs and blocks, its static checks (Static),
// what it confirms on its own (ConfirmsFor, Conditions) and which action
// it takes (Act, through the runner's Actor).
//
// Start reading at step.go: Kind, Kinds (the registry), Config and
// Common (what every step has: target, description, timeout, interval,
// always, keep, progress). Then run.go, the simplest kind with an
// action, and wait.go, one without. plans derives the language's step
// kinds from Kinds (plans.Language) and validates a step by decoding it
// into its kind's config with the decoder the run uses
// (schema.DecodeChecked); the runner decodes it the same way
// (plans.Scope.StepConfig) and asks the config what to do. This package
// never imports plans.
//
// The benchmark's load adapter (load*.go, attrs.go) lives here too until
// it moves to the loads package. The probes are in package probes.
package steps
