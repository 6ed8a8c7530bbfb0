// Package loadtest holds servers whose behaviour is known exactly, for
// testing the loads package against the truth: an HTTP server with
// controllable latency, errors and stalls, and an OpenAI-style server that
// streams tokens at known times.
//
// Both listen on 127.0.0.1 on a free port, in the test's own process.
package loadtest
