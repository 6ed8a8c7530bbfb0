// Package runner runs a plan: each step's action, then its confirm loop,
// which will not let the plan move on until what the probes observe
// confirms the step. Start reading at Run; a step's life is in step.go,
// the confirm loop in confirm.go, the end of a run in cleanup.go.
//
// The runner never prints: it emits events (package events) to the
// observer it is given.
package runner
