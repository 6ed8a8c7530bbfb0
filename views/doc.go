// Package views renders lockstep's data for a reader; nothing else in
// lockstep formats text for one. plans, runner and records return data
// (an Explanation, a plan's Changes, an attempt and its tables and
// comparisons, the runner's events); views turns it into text, Markdown
// or JSON, as Terraform's internal/command/views does. No view decides
// anything: the exit code comes from the runner's result.
//
// Two kinds of view:
//
//   - Documents, rendered whole in a Format: Explain (plans.Explain),
//     PlanDiff (plans.Diff), Attempts (records.Tables: the table of
//     attempts and a matrix's), Show (one attempt) and AttemptDiff
//     (records.Compare). Each writes through doc (doc_writer.go), the one
//     document writer, implemented once per format by textDoc and
//     markdownDoc; JSON is the view's data itself. JUnit renders attempts
//     as the XML CI systems read: it is derived from the record, like
//     show, and shares show's lines.
//   - Run views, fed the runner's events as they come (run.go): JSONLines
//     (--json), Lines (plain lines for pipes and CI) and Live (a terminal,
//     the step in progress redrawn in place). ProgressOf is the same
//     events as a client's progress bar (the MCP server's notifications).
//
// The subpackage charts draws a report's charts as SVG from plain data.
//
// What the world wrote (a log line, a value a probe read) goes through
// terminal.Printable before it is shown; sensitive values arrive already
// redacted, as (sensitive), and are never recovered here.
//
// Start reading at doc_writer.go, then a view: explain.go is the
// shortest.
package views
