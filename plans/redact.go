package plans

import "github.com/zclconf/go-cty/cty"

// Redacted is what a sensitive value is shown as.
const Redacted = "(sensitive)"

// Redacted returns a copy of the scope in which every sensitive value (and
// every local computed from one) is the string "(sensitive)", so that an
// expression evaluated in it can be shown, as a command was run, without
// its secrets.
func (s *Scope) Redacted() *Scope {
	c := *s
	c.Vars = redactAll(s.Vars)
	c.Locals = redactAll(s.Locals)
	return &c
}

func redactAll(in map[string]cty.Value) map[string]cty.Value {
	out := make(map[string]cty.Value, len(in))
	for k, v := range in {
		if _, marks := v.UnmarkDeep(); len(marks) > 0 {
			if _, ok := marks[Sensitive]; ok {
				v = cty.StringVal(Redacted)
			}
		}
		out[k] = v
	}
	return out
}
