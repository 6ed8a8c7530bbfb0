package records

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// unifiedContext is the lines of context around each change, as diff -u.
const unifiedContext = 3

// unified returns the unified diff of two texts, line by line, empty when
// they are equal. difflib's matcher (Python's, which diff -u agrees with
// on plans) stays near linear where a longest common subsequence table
// would take the square of a 10,000-line plan's lines in memory.
func unified(aName, bName, a, b string) []string {
	if a == b {
		return nil
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: splitLines(a), B: splitLines(b),
		FromFile: aName, ToFile: bName,
		Context: unifiedContext,
	})
	if err != nil {
		// It writes to a strings.Builder, which does not fail.
		panic(err)
	}
	return strings.Split(strings.TrimSuffix(d, "\n"), "\n")
}

// splitLines is a text's lines, each with its newline, as difflib
// compares them: a last line without one is given one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	lines[len(lines)-1] += "\n"
	return lines
}
