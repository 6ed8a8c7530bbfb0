package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
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
			if line, ok := sourceLine(files, r.Filename, r.Start.Line); ok {
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

// sourceLine returns line n (1-based) of a file, tabs shown as spaces so
// the underline lines up.
func sourceLine(files map[string]*hcl.File, name string, n int) (string, bool) {
	f := files[name]
	if f == nil || n < 1 {
		return "", false
	}
	lines := bytes.Split(f.Bytes, []byte("\n"))
	if n > len(lines) {
		return "", false
	}
	return strings.ReplaceAll(strings.TrimRight(string(lines[n-1]), "\r"), "\t", " "), true
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

// jsonDiagnostic is the machine-readable form of a diagnostic, shaped like
// terraform validate -json's.
type jsonDiagnostic struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
	Snippet  string     `json:"snippet,omitempty"` // the subject's first source line
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

func toJSONDiagnostics(files map[string]*hcl.File, diags hcl.Diagnostics) []jsonDiagnostic {
	out := []jsonDiagnostic{}
	for _, d := range diags {
		jd := jsonDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if r := d.Subject; r != nil {
			jd.Range = &jsonRange{
				Filename: r.Filename,
				Start:    jsonPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      jsonPos{r.End.Line, r.End.Column, r.End.Byte},
			}
			jd.Snippet, _ = sourceLine(files, r.Filename, r.Start.Line)
		}
		out = append(out, jd)
	}
	return out
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
