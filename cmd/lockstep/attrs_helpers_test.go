package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"lockstep/runner/records"
)

// writeAttrs writes attrs as NAME = VALUE lines in name order, each after
// indent: the body of a block in a generated plan.
func writeAttrs(b *strings.Builder, indent string, attrs map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Fprintf(b, "%s%s = %s\n", indent, name, attrs[name])
	}
}

// validateExplainRun takes the plan file plan (its text src, shown when a
// command fails) through lockstep validate, explain and run, as a user
// would, and returns what explain said and the attempt's record.
func validateExplainRun(t *testing.T, plan, src string) (explained string, att records.Attempt) {
	t.Helper()
	lockstep := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("lockstep %s: exit %d\n%s\n%s\nplan:\n%s", strings.Join(args, " "), code, out.String(), errb.String(), src)
		}
		return out.String()
	}
	lockstep("validate", plan)
	explained = lockstep("explain", plan)
	lockstep("run", plan)
	if err := json.Unmarshal([]byte(lockstep("attempts", "show", "last", "--format", "json", plan)), &att); err != nil {
		t.Fatal(err)
	}
	return explained, att
}
