package plans

import (
	"bytes"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Validation is the machine-readable result of checking plans: what
// `lockstep validate --json` prints and the MCP server's validate tool
// answers. FormatVersion follows Terraform's machine-readable output.
type Validation struct {
	FormatVersion string           `json:"format_version"`
	Valid         bool             `json:"valid"`
	ErrorCount    int              `json:"error_count"`
	WarningCount  int              `json:"warning_count"`
	Plans         []PlanValidation `json:"plans"`
}

// PlanValidation is one plan's part of a Validation.
type PlanValidation struct {
	Path         string       `json:"path"`
	Name         string       `json:"name,omitempty"`
	Valid        bool         `json:"valid"`
	ErrorCount   int          `json:"error_count"`
	WarningCount int          `json:"warning_count"`
	Diagnostics  []Diagnostic `json:"diagnostics"`
}

// ValidationVersion is Validation's format_version.
const ValidationVersion = "1"

// Add appends one plan's result, parsed from path, and updates the counts.
func (v *Validation) Add(path string, p *Plan, diags hcl.Diagnostics) {
	pv := PlanValidation{Path: path, Diagnostics: JSONDiagnostics(p.Files, diags)}
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			pv.ErrorCount++
		} else {
			pv.WarningCount++
		}
	}
	pv.Valid = pv.ErrorCount == 0
	if pv.Valid {
		pv.Name = p.Name
	}
	v.ErrorCount += pv.ErrorCount
	v.WarningCount += pv.WarningCount
	v.Valid = v.ErrorCount == 0
	v.Plans = append(v.Plans, pv)
}

// Diagnostic is the machine-readable form of a diagnostic, shaped like
// terraform validate -json's.
type Diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
	Range    *Range `json:"range,omitempty"`
	Snippet  string `json:"snippet,omitempty"` // the subject's first source line
}

// Range is where a diagnostic's subject is: FILE:LINE:COL to LINE:COL.
type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// Pos is a position in a file, 1-based line and column.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONDiagnostics converts diagnostics to their machine-readable form.
func JSONDiagnostics(files map[string]*hcl.File, diags hcl.Diagnostics) []Diagnostic {
	out := []Diagnostic{}
	for _, d := range diags {
		jd := Diagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if r := d.Subject; r != nil {
			jd.Range = &Range{
				Filename: r.Filename,
				Start:    Pos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      Pos{r.End.Line, r.End.Column, r.End.Byte},
			}
			jd.Snippet, _ = SourceLine(files, r.Filename, r.Start.Line)
		}
		out = append(out, jd)
	}
	return out
}

// SourceLine returns line n (1-based) of a file, tabs shown as spaces so
// that an underline lines up.
func SourceLine(files map[string]*hcl.File, name string, n int) (string, bool) {
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
