// Package probes holds the probe kinds: what a step observes each turn
// (a command's result, an HTTP answer, a log's new lines, processes, a
// port, a file, the GPUs). Each kind is one file (exec.go, http.go,
// log.go, process.go, port.go, file.go, gpu.go) with its config struct,
// whose field tags are its attributes with their docs, the function
// returning its defaults, its outputs, its Check, the summary explain
// shows, and its observation.
//
// Start with Kinds (probes.go), the registry plans derives the language's
// probes from, and Config: a probe block is decoded onto its kind's
// defaults with schema.DecodeChecked, in validate and in the run alike,
// and the run makes the probe with Config.New. follow.go is the log
// follower, which the runner also reads a launch's own log with.
//
// probes imports neither plans nor the runner.
package probes
