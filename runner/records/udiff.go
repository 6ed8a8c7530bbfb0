package records

import (
	"fmt"
	"strings"
)

// unifiedContext is the lines of context around each change, as diff -u.
const unifiedContext = 3

// unified returns the unified diff of two texts, line by line, empty when
// they are equal. Plans are small: the quadratic longest common
// subsequence is fine and keeps this free of dependencies.
func unified(aName, bName, a, b string) []string {
	if a == b {
		return nil
	}
	x, y := splitLines(a), splitLines(b)
	// lcs[i][j]: length of the longest common subsequence of x[i:], y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		i, j int // line numbers (0-based) in x and y before this op
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i, j})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, op{'+', y[j], i, j})
			j++
		default:
			ops = append(ops, op{'-', x[i], i, j})
			i++
		}
	}
	out := []string{"--- " + aName, "+++ " + bName}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from unifiedContext lines before this change to
		// unifiedContext lines after the last change that is not
		// further than 2*unifiedContext from the one before it.
		start := max(0, k-unifiedContext)
		end := k
		for m := k; m < len(ops); m++ {
			if ops[m].kind != ' ' {
				end = m
			} else if m-end > 2*unifiedContext {
				break
			}
		}
		stop := min(len(ops), end+unifiedContext+1)
		var body []string
		na, nb := 0, 0
		for _, o := range ops[start:stop] {
			body = append(body, string(o.kind)+o.text)
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(ops[start].i, na), hunkRange(ops[start].j, nb)))
		out = append(out, body...)
		k = stop
	}
	return out
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
