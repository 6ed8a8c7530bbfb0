package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The limits of values the kinds read from the world: plans declares the
// rest of its limits (README, "Limits") beside these, and the kind
// packages, which do not import plans, check what they read against
// them.
const (
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
)

// LimitError is a value, an input or an evaluation beyond one of the
// limits. It is the Extra of the diagnostics that report one (directly,
// or through a function call's error), so the runner can fail a step at
// once rather than wait for a limit to stop being exceeded.
type LimitError struct {
	Msg string // says which limit, by how much, and how to stay within it
}

func (e *LimitError) Error() string { return e.Msg }

// Permanent reports that waiting does not cure a limit exceeded: a step
// that meets one fails at once (the runner asks its probes' errors so).
func (e *LimitError) Permanent() bool { return true }

// Limitf is a LimitError with a formatted message.
func Limitf(format string, args ...any) *LimitError {
	return &LimitError{Msg: fmt.Sprintf(format, args...)}
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
		return Limitf("JSON of %s is longer than the limit of %s", Size(len(data)), Size(MaxStringBytes))
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
				return Limitf("JSON nested more than %d levels deep, the limit", MaxNesting)
			}
		case json.Number:
			if len(t) > MaxNumberLength {
				return Limitf("a JSON number of %d characters; a number is at most %d characters long", len(t), MaxNumberLength)
			}
		}
	}
}
