package records

import (
	"lockstep/runner/records/recordstest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnifiedMatchesDiffU(t *testing.T) {
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff(1) to compare with")
	}
	long := strings.Repeat("same\n", 10)
	cases := []struct{ name, a, b string }{
		{"one change", recordstest.PlanV1, recordstest.PlanV2},
		{"added at end", "a\nb\n", "a\nb\nc\n"},
		{"removed at start", "a\nb\nc\n", "b\nc\n"},
		{"two hunks", "x\n" + long + "y\n", "X\n" + long + "Y\n"},
		{"close changes merge", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\nb\n3\n4\n5\n6\nc\n8\n"},
		{"from empty", "", "a\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			os.WriteFile(pa, []byte(c.a), 0o600)
			os.WriteFile(pb, []byte(c.b), 0o600)
			out, _ := exec.Command(diff, "-u", "--label", "a", "--label", "b", pa, pb).Output()
			want := strings.TrimSuffix(string(out), "\n")
			got := strings.Join(unified("a", "b", c.a, c.b), "\n")
			if got != want {
				t.Errorf("got\n%s\nwant (diff -u)\n%s", got, want)
			}
		})
	}
	if got := unified("a", "b", recordstest.PlanV1, recordstest.PlanV1); got != nil {
		t.Errorf("equal texts give %q", got)
	}
}
