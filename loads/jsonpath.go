package loads

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// JSONPath is a metric's json path: keys and list indexes, as in
// "results.throughput", "items[0].value" or "[0].x", with an optional
// leading "$" or "$." (JSONPath's root). It is the one grammar validate
// checks and a command benchmark reads by.
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

// Lookup follows the path into a value decoded by encoding/json; the
// error says where the document and the path part.
func (p JSONPath) Lookup(doc any) (any, error) {
	cur := doc
	walked := ""
	where := func() string {
		if walked == "" {
			return "the document"
		}
		return walked
	}
	for _, e := range p {
		if e.Index >= 0 {
			l, ok := cur.([]any)
			if !ok {
				return nil, fmt.Errorf("%s is not an array", where())
			}
			if e.Index >= len(l) {
				return nil, fmt.Errorf("%s has %d elements, no [%d]", where(), len(l), e.Index)
			}
			cur = l[e.Index]
			walked += fmt.Sprintf("[%d]", e.Index)
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", where())
		}
		v, ok := m[e.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %q", where(), e.Key)
		}
		cur = v
		if walked != "" {
			walked += "."
		}
		walked += e.Key
	}
	return cur, nil
}

// extractJSON reads the number at path in doc.
func extractJSON(doc any, path string) (float64, error) {
	p, err := ParseJSONPath(path)
	if err != nil {
		return 0, err
	}
	cur, err := p.Lookup(doc)
	if err != nil {
		return 0, fmt.Errorf("json path %q: %w", path, err)
	}
	switch v := cur.(type) {
	case json.Number:
		return v.Float64()
	case string:
		return parseNumber(v)
	default:
		return 0, fmt.Errorf("json path %q: value %v is not a number", path, cur)
	}
}
