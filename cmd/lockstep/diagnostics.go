package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"lockstep/plans"
)

// writeDiagnostics prints diagnostics for a reader: where (file:line:col),
// what, the source line with the subject underlined, and the detail that
// says how to fix it.
//
//	plan.hcl:4:3: error: Unsupported argument
//	    4 |   log     = "/tmp/build.log"
//	      |   ^^^
//	  A run step has no argument "log"; ...
func writeDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) {
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if d.Subject == nil {
			fmt.Fprintf(w, "%s: %s\n", sev, d.Summary)
		} else {
			r := d.Subject
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, sev, d.Summary)
			if line, ok := plans.SourceLine(files, r.Filename, r.Start.Line); ok {
				num := fmt.Sprint(r.Start.Line)
				fmt.Fprintf(w, "  %s | %s\n", num, line)
				start := r.Start.Column
				end := r.End.Column
				if r.End.Line != r.Start.Line {
					end = utf8.RuneCountInString(line) + 1
				}
				if end <= start {
					end = start + 1
				}
				fmt.Fprintf(w, "  %s | %s%s\n", strings.Repeat(" ", len(num)), strings.Repeat(" ", start-1), strings.Repeat("^", end-start))
			}
		}
		if d.Detail != "" {
			for _, l := range strings.Split(d.Detail, "\n") {
				if l == "" {
					fmt.Fprintln(w)
					continue
				}
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		fmt.Fprintln(w)
	}
}

func countDiagnostics(diags hcl.Diagnostics) (errs, warns int) {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// plural writes "1 error" or "2 errors".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
