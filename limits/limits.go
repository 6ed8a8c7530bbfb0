package limits

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The limits below bound what a plan and its inputs may hold and what
// evaluating them may compute, so that no plan makes validate, explain,
// fmt or run hang or exhaust memory: CI runs validate on plans from pull
// requests. Each is documented in the README ("Limits").
//
// Where the time goes without them: cty numbers are big.Float, so
// 1e100000000 is cheap to hold but printing it ("${...}s") writes a
// hundred million digits, which takes minutes (1e-100000 alone takes
// seconds); reading long text as a number is quadratic in its length;
// hcl's parser and evaluator recurse once per nesting level, so a
// deeply nested expression overflows the stack, which Go cannot recover
// from; and functions such as range, split or replace allocate in
// proportion to their arguments' values. So numbers are held to what a
// 64-bit float can hold everywhere a value is made (literals, variables,
// locals, function results, arithmetic, observed values), text read as a
// number is short, nesting is shallow, and functions refuse, before they
// allocate, results beyond a string or element limit.
const (
	// MaxPlanBytes is the size of a plan file. A generated plan of 1,000
	// steps is 295 KB.
	MaxPlanBytes = 1 << 20
	// MaxVarFileBytes is the size of a -var-file.
	MaxVarFileBytes = 1 << 20
	// MaxVarValueBytes is the length of a value given with -var or
	// LOCKSTEP_VAR_NAME.
	MaxVarValueBytes = 64 << 10
	// MaxNesting is how deep brackets, blocks, template interpolations,
	// unary operators and expression trees may nest.
	MaxNesting = 64
	// MaxNumberLength is the length of a number, written in a plan or as
	// text converted to a number (tonumber, parseint, "12" + 1).
	MaxNumberLength = 1000
	// MaxStringBytes is the length of a string a value holds: a variable,
	// a local, a function's result, an observed value. It is what a
	// command's output keeps (a log probe keeps 8 MiB).
	MaxStringBytes = 64 << 20
	// MaxLocalsBytes is what the locals hold together, strings counted by
	// their length and elements at 16 bytes: many locals each just under
	// the string limit would otherwise add up without bound.
	MaxLocalsBytes = 64 << 20
	// MaxElements is how many elements (of lists, sets, tuples, maps and
	// objects, nested ones included) one value holds.
	MaxElements = 100_000
	// MaxFormatWidth is the largest width or precision in a format verb
	// (format("%10d", n)).
	MaxFormatWidth = 1000
	// MaxRange is how many numbers range makes: go-cty's own limit,
	// checked first so that the error says it is a limit.
	MaxRange = 1024
)

// Error is a value, an input or an evaluation beyond one of the
// limits. It is the Extra of the diagnostics that report one (directly,
// or through a function call's error), so the runner can fail a step at
// once rather than wait for a limit to stop being exceeded.
type Error struct {
	msg string // says which limit, by how much, and how to stay within it
}

func (e *Error) Error() string { return e.msg }

// Permanent reports that waiting does not cure a limit exceeded: a step
// that meets one fails at once (the runner asks its probes' errors so).
func (e *Error) Permanent() bool { return true }

// Errorf makes an *Error; the message says which limit, by how much,
// and how to stay within it.
func Errorf(format string, args ...any) *Error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// Size shows a byte count as the limits are written: 16 MiB, 64 KiB.
func Size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// CheckJSON checks JSON data read into a plan value (jsondecode, a
// probe's or a command's json output) against the limits that must hold
// before it is read: its numbers' lengths and how deep it nests. Data
// that is not JSON passes: the reader reports it.
func CheckJSON(data []byte) error {
	if len(data) > MaxStringBytes {
		return Errorf("JSON of %s is longer than the limit of %s", Size(len(data)), Size(MaxStringBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
			if depth > MaxNesting {
				return Errorf("JSON nested more than %d levels deep, the limit", MaxNesting)
			}
		case json.Number:
			if len(t) > MaxNumberLength {
				return Errorf("a JSON number of %d characters; a number is at most %d characters long", len(t), MaxNumberLength)
			}
		}
	}
}
