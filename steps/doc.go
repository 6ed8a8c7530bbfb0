// Package steps holds the step kinds: run, launch, wait, assert and
// benchmark, one file each. A kind's file has its config struct (the
// attributes, their docs and types in field tags, which schema reads),
// the function giving its defaults (the one place a default is
// declared), its self outputs and blocks, its static checks (Static),
// what it confirms on its own (ConfirmsFor, Conditions) and its action
// (Act): running the command (run.go), starting and watching the
// process (launch.go), running the load or the command and keeping the
// metrics (benchmark.go).
//
// Start reading at step.go: Kind, Kinds (the registry), Config and
// Common (what every step has: target, description, timeout, interval,
// always, keep, progress). Then run.go, the simplest kind with an
// action, and wait.go, one without. An action works through Env
// (env.go), the narrow interface the runner implements with what only
// it has (the target, the events, self, the record, the watch on
// launches); it ends by its error, as Env says.
//
// plans derives the language's step kinds from Kinds (plans.Language)
// and validates a step by decoding it into its kind's config with the
// decoder the run uses (schema.DecodeChecked); the runner decodes it the
// same way (plans.Scope.StepConfig) and asks the config what to do. This
// package never imports plans or the runner. The probes are in package
// probes, the load kinds in package loads.
package steps
