package runner

import (
	"slices"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

// What the plan computes is redacted by its marks (plans.Show, Render):
// the runner never looks for a secret's text there. What comes back from
// the world is data without marks: a server that logs the token it was
// given, a probe that reads a config file, an error that quotes a header.
// guard is the net for that, and only for that: the text of a log line,
// of a string the world returned (a body, stdout, a JSON string), of an
// error. There, a sensitive value's text is replaced by (sensitive) where
// it stands as a whole word (not inside a longer word or number: a secret
// "step" leaves "steps" alone), and only in text: a number, a bool, a
// JSON key, a status, a pid is never touched, so a secret that happens to
// be "true" or "1593" changes nothing but the places where it is itself.

// minSecret is the shortest sensitive value the guard looks for: a
// shorter one ("1", "on") would blank out ordinary words.
const minSecret = 4

// guard replaces the sensitive values' text in what the world says. Its
// list grows as the run computes values from sensitive ones (a header
// made with base64encode(var.token) is what a server would echo).
type guard struct {
	mu      sync.Mutex
	secrets []string // longest first, so a longer one wins where two overlap
	longest int
}

func newGuard(secrets []string) *guard {
	g := &guard{}
	g.add(secrets...)
	return g
}

func (g *guard) add(secrets ...string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range secrets {
		if len(s) < minSecret || slices.Contains(g.secrets, s) {
			continue
		}
		g.secrets = append(g.secrets, s)
		g.longest = max(g.longest, len(s))
	}
	slices.SortFunc(g.secrets, func(a, b string) int { return len(b) - len(a) })
}

func (g *guard) list() []string {
	if g == nil {
		return nil // a step made without a run (tests): nothing to guard
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.secrets
}

// text returns s with every whole-word occurrence of a secret replaced.
func (g *guard) text(s string) string {
	return plans.ReplaceWords(s, g.list(), func(int) string { return redacted })
}

// lines guards each line.
func (g *guard) lines(ls []string) []string {
	if len(g.list()) == 0 {
		return ls
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = g.text(l)
	}
	return out
}

// value returns v with the guard applied to every string inside it (map
// keys, numbers and bools kept). Strings are first cut to what Render
// can show, plus room for a secret that starts where it cuts: guarding
// 8 MiB of log text on every turn would cost more than the turn.
func (g *guard) value(v cty.Value) cty.Value {
	if len(g.list()) == 0 || plans.IsSensitive(v) {
		return v
	}
	g.mu.Lock()
	keep := 300 + g.longest
	g.mu.Unlock()
	out, err := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() != cty.String || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return v, nil
		}
		return cty.StringVal(g.text(cut(v.AsString(), keep))), nil
	})
	if err != nil {
		return v
	}
	return out
}

// render is Render for a value that came from the world, guarded.
func (g *guard) render(v cty.Value) string {
	return Render(g.value(v))
}

// redactor shows an action's or a probe's errors with what its inputs
// were shown as: the real text of each sensitive input (a URL with a
// token in it) replaced by its shown text, decided by the marks when the
// input was evaluated; then the guard.
type redactor struct {
	g     *guard
	real  []string // longest first
	shown []string
}

func (r *redactor) addInput(real string, shown plans.Shown) {
	r.g.add(shown.Hidden...)
	if real == shown.Text || real == "" {
		return
	}
	i, _ := slices.BinarySearchFunc(r.real, len(real), func(s string, n int) int { return n - len(s) })
	r.real = slices.Insert(r.real, i, real)
	r.shown = slices.Insert(r.shown, i, shown.Text)
}

func (r *redactor) text(s string) string {
	s = plans.ReplaceWords(s, r.real, func(i int) string { return r.shown[i] })
	return r.g.text(s)
}
