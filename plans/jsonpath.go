package plans

import (
	"fmt"
	"strconv"
	"strings"
)

// JSONPath is a parsed metric json path: keys and list indexes, as in
// "results.throughput" or "items[0].value" (a leading "$." is allowed).
type JSONPath []JSONPathElem

// JSONPathElem is one key (Index < 0) or one list index.
type JSONPathElem struct {
	Key   string
	Index int
}

// ParseJSONPath parses a metric's json path.
func ParseJSONPath(s string) (JSONPath, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(s, "$"), ".")
	if strings.TrimSpace(rest) == "" {
		return nil, fmt.Errorf("json path %q is empty", s)
	}
	var path JSONPath
	for _, seg := range strings.Split(rest, ".") {
		key, idx, hasIdx := strings.Cut(seg, "[")
		if key == "" && !hasIdx {
			return nil, fmt.Errorf("json path %q has an empty key", s)
		}
		if key != "" {
			if strings.ContainsAny(key, "]") {
				return nil, fmt.Errorf("json path %q has a stray ]", s)
			}
			path = append(path, JSONPathElem{Key: key, Index: -1})
		}
		for hasIdx {
			num, after, ok := strings.Cut(idx, "]")
			if !ok {
				return nil, fmt.Errorf("json path %q has an unclosed [", s)
			}
			n, err := strconv.Atoi(num)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("json path %q: %q is not a list index", s, num)
			}
			path = append(path, JSONPathElem{Index: n})
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("json path %q: write a dot before %q", s, after)
			}
			idx = after[1:]
		}
	}
	return path, nil
}

// Find follows the path into a value decoded by encoding/json.
func (p JSONPath) Find(doc any) (any, bool) {
	cur := doc
	for _, e := range p {
		if e.Index < 0 {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[e.Key]; !ok {
				return nil, false
			}
			continue
		}
		l, ok := cur.([]any)
		if !ok || e.Index >= len(l) {
			return nil, false
		}
		cur = l[e.Index]
	}
	return cur, true
}
