// Package runner runs a plan: each step's action, then its confirm loop,
// which will not let the plan move on until what the probes observe
// confirms the step. Start reading at Run; a step's life is in step.go,
// the confirm loop in confirm.go, the end of a run in cleanup.go.
//
// The actions themselves are the step kinds' (package steps: run.go,
// launch.go, benchmark.go there). The runner gives them what only it
// has through steps.Env (env.go: the target, the events, self, the
// record, the launches it watches, daemon.go and watch.go, and stops,
// cleanup.go) and turns how an action ended into the step's outcome
// (stepRun.act).
//
// The runner never prints: it emits events (package events) to the
// observer it is given.
package runner
