// Package plans reads lockstep plan files: it parses HCL (or JSON) into a
// typed Plan, checks it statically (every problem in one pass, each as an
// hcl.Diagnostic that says how to fix it), resolves variables into a Scope
// that expressions are evaluated in, formats files, and says as data what
// a plan does (Explain, an Explanation) and what a change to it changes
// (Diff, its Changes); package views renders those.
//
// Start with Parse (parse.go) and the checks (check.go); Language
// (schema.go) holds the whole language as plain data, which fmt, explain,
// validate and the docs all read. Before hcl reads a file, one pass over
// its bytes (prescan.go) bounds its nesting for the limits (limits.go)
// and finds where it may be cut, and hcl's parser reads it in those
// pieces (cut.go).
package plans
