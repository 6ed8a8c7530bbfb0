package plans_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"lockstep/plans"
)

var update = flag.Bool("update", false, "rewrite golden files and the want headers of testdata/invalid")

// Each file under testdata/invalid starts with the diagnostics it must
// produce, all of them and nothing else, in file order:
//
//	# want: LINE:COL Summary      (an error)
//	# warn: LINE:COL Summary      (a warning)
//	# detail: text                (some diagnostic's detail contains text)
func TestInvalidPlans(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	// JSON has no comments: a JSON plan's header is in FILE.want beside it.
	jsonFiles, err := filepath.Glob("testdata/invalid/*.json")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, jsonFiles...)
	if len(files) < 40 {
		t.Fatalf("only %d invalid plans; the corpus should cover every error kind", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			header := src
			if strings.HasSuffix(path, ".json") {
				if *update {
					writeJSONWants(t, path, src)
				}
				if header, err = os.ReadFile(path + ".want"); err != nil {
					t.Fatal(err)
				}
			} else if *update {
				src = rewriteWants(t, path, src)
				header = src
			}
			var want, details []string
			for _, line := range strings.Split(string(header), "\n") {
				switch {
				case strings.HasPrefix(line, "# want: "):
					want = append(want, "error "+strings.TrimPrefix(line, "# want: "))
				case strings.HasPrefix(line, "# warn: "):
					want = append(want, "warning "+strings.TrimPrefix(line, "# warn: "))
				case strings.HasPrefix(line, "# detail: "):
					details = append(details, strings.TrimPrefix(line, "# detail: "))
				}
			}
			if len(want) == 0 {
				t.Fatal("no # want: or # warn: header")
			}
			_, diags := plans.Parse(path, src)
			got := describe(diags)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("diagnostics:\n  %s\nwant:\n  %s\n\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), diags.Error())
			}
			for _, d := range details {
				found := false
				for _, diag := range diags {
					found = found || strings.Contains(diag.Detail, d)
				}
				if !found {
					t.Errorf("no diagnostic detail contains %q:\n%s", d, diags.Error())
				}
			}
			for _, diag := range diags {
				if diag.Subject == nil {
					t.Errorf("diagnostic %q has no subject range", diag.Summary)
				}
				if diag.Detail == "" {
					t.Errorf("diagnostic %q has no detail saying how to fix it", diag.Summary)
				}
			}
		})
	}
}

func describe(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		pos := "0:0"
		if d.Subject != nil {
			pos = fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column)
		}
		out = append(out, fmt.Sprintf("%s %s %s", sev, pos, d.Summary))
	}
	return out
}

// rewriteWants replaces the want and warn lines with what Parse reports,
// keeping detail lines; run with -update, then read every header.
func rewriteWants(t *testing.T, path string, src []byte) []byte {
	var details, body []string
	lines := strings.Split(string(src), "\n")
	i := 0
	for ; i < len(lines) && strings.HasPrefix(lines[i], "# "); i++ {
		if strings.HasPrefix(lines[i], "# detail: ") {
			details = append(details, lines[i])
		}
	}
	body = lines[i:]
	var header []string
	for range 3 { // the header's length depends on the number of diagnostics only
		text := strings.Join(append(append(append([]string{}, header...), details...), body...), "\n")
		_, diags := plans.Parse(path, []byte(text))
		header = header[:0]
		for _, d := range describe(diags) {
			sev, rest, _ := strings.Cut(d, " ")
			tag := "# want: "
			if sev == "warning" {
				tag = "# warn: "
			}
			header = append(header, tag+rest)
		}
	}
	out := []byte(strings.Join(append(append(header, details...), body...), "\n"))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeJSONWants writes the want and warn lines of a JSON plan to its
// .want file, keeping detail lines.
func writeJSONWants(t *testing.T, path string, src []byte) {
	var lines []string
	_, diags := plans.Parse(path, src)
	for _, d := range describe(diags) {
		sev, rest, _ := strings.Cut(d, " ")
		tag := "# want: "
		if sev == "warning" {
			tag = "# warn: "
		}
		lines = append(lines, tag+rest)
	}
	if old, err := os.ReadFile(path + ".want"); err == nil {
		for _, l := range strings.Split(string(old), "\n") {
			if strings.HasPrefix(l, "# detail: ") {
				lines = append(lines, l)
			}
		}
	}
	if err := os.WriteFile(path+".want", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
