package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

const matrixPlan = `plan "matrix" {}

variable "mode" {
  type    = string
  default = "good"
}

step "run" "check" {
  command = "test ${shellquote(var.mode)} = good"
  postcondition {
    condition     = self.exit_code == 0
    error_message = "the mode under trial is not good"
  }
}

step "run" "after" {
  command = "true"
}
`

// --junit with --matrix holds every attempt, a testsuite each, and is
// written owner-only (it holds commands and evidence), also over a report
// that was readable by all.
func TestJUnitOfAMatrix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.hcl"), []byte(matrixPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.xml")
	if err := os.WriteFile(report, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("lockstep", "run", "plan.hcl", "--matrix", "mode=good,bad,good", "--junit", "report.xml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOCKSTEP_RECORDS=")
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d, want 1 (an attempt failed):\n%s", code, out)
	}
	info, err := os.Stat(report)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("report mode %v, want 0600", perm)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name       string `xml:"name,attr"`
			Tests      int    `xml:"tests,attr"`
			Failures   int    `xml:"failures,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the report does not parse: %v\n%s", err, data)
	}
	if len(doc.Suites) != 3 {
		t.Fatalf("%d testsuites, want one per attempt (3):\n%s", len(doc.Suites), data)
	}
	if doc.Tests != 6 || doc.Failures != 1 || doc.Skipped != 1 {
		t.Errorf("totals: %d tests, %d failures, %d skipped; want 6, 1, 1", doc.Tests, doc.Failures, doc.Skipped)
	}
	for i, want := range []struct {
		mode     string
		failures int
	}{{`"good"`, 0}, {`"bad"`, 1}, {`"good"`, 0}} { // values as HCL renders them
		s := doc.Suites[i]
		if wantName := "matrix attempt " + string(rune('1'+i)); s.Name != wantName {
			t.Errorf("suite %d is %q, want %q", i, s.Name, wantName)
		}
		mode := ""
		for _, p := range s.Properties {
			if p.Name == "var.mode" {
				mode = p.Value
			}
		}
		if mode != want.mode || s.Failures != want.failures || s.Tests != 2 || len(s.Cases) != 2 || s.Cases[0].Name != "run.check" {
			t.Errorf("suite %d: mode %q, %d failures, %d tests; want %q, %d, 2", i, mode, s.Failures, s.Tests, want.mode, want.failures)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".report.xml.*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// A real build records its version control revision, time and whether
// the tree was modified; lockstep version prints them. Built from a clone
// of this checkout (the go command stamps a plain git repository).
func TestVersionFromBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockstep")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "git", "clone", "-q", "--no-hardlinks", strings.TrimSpace(string(top)), clone)
	rev := run(clone, "git", "rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "lockstep")
	run(clone, "go", "build", "-o", bin, "./cmd/lockstep")
	out := run("", bin, "version")
	if !strings.Contains(out, "revision "+rev) || strings.Contains(out, "modified") {
		t.Errorf("lockstep version of a clean build of %s:\n%s", rev, out)
	}
	if out2 := run("", bin, "--version"); out2 != out {
		t.Errorf("--version %q differs from version %q", out2, out)
	}
	// A change in the tree shows.
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(clone, "go", "build", "-o", bin, "./cmd/lockstep")
	if out := run("", bin, "version"); !strings.Contains(out, "revision "+rev) || !strings.Contains(out, ", modified)") {
		t.Errorf("lockstep version of a modified tree:\n%s", out)
	}
}

func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{bi, "v1.2.3 (revision 0123abcd, 2026-12-01T09:00:00Z, modified)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{&debug.BuildInfo{}, "(devel)"},
	} {
		if got := versionOf(c.bi); got != c.want {
			t.Errorf("versionOf = %q, want %q", got, c.want)
		}
	}
}
