// Package agents serves lockstep to AI agents over the Model Context
// Protocol: tools to validate, explain and run plans, follow and cancel
// the attempts they start, and read the records. An agent is an
// untrusted caller: the server reads plans only under its roots, runs
// only plans whose targets are allowed, and answers with the records'
// redacted values. Start reading at New; the tools are in tools.go, the
// attempts the server runs in attempts.go.
package agents
