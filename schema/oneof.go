package schema

import (
	"fmt"
	"reflect"
	"strings"
)

// OneOfError is a config that sets none, or more than one, of attributes
// of which exactly one must be set (a log probe's path or step).
type OneOfError struct {
	Names []string // the attributes of which one must be set
	Set   []string // those set, in Names' order
}

func (e *OneOfError) Error() string {
	if len(e.Set) == 0 {
		return "sets none of " + joinWith(e.Names, "or") + "; set one"
	}
	return "sets " + joinWith(e.Set, "and") + "; set only one of " + joinWith(e.Names, "or")
}

func joinWith(names []string, word string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + word + " " + names[len(names)-1]
}

// OneOf checks, for a config's Check, that exactly one of the attributes
// names of the struct cfg points to is set: holds other than its zero
// value. Validation sees an attribute whose value is not yet known as
// unset, so plans checks these from the source instead and leaves a
// *OneOfError to the run.
func OneOf(cfg any, names ...string) error {
	v := reflect.Indirect(reflect.ValueOf(cfg))
	fs, err := fields(v.Type())
	if err != nil {
		panic(err)
	}
	byName := map[string]reflect.Value{}
	for _, f := range fs {
		byName[f.attr.Name] = v.Field(f.index)
	}
	var set []string
	for _, n := range names {
		fv, ok := byName[n]
		if !ok {
			panic(fmt.Sprintf("schema: %s has no attribute %q", v.Type(), n))
		}
		if !fv.IsZero() {
			set = append(set, n)
		}
	}
	if len(set) == 1 {
		return nil
	}
	return &OneOfError{Names: names, Set: set}
}
