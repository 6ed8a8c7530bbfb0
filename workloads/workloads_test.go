package workloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lockstep/workloads"
)

// open makes c's workload, failing the test on an error.
func open(t *testing.T, c workloads.Config) *workloads.Workload {
	t.Helper()
	w, err := workloads.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// write puts content in a file of t's temporary folder.
func write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// message is a chat message as a request sends it.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func messages(t *testing.T, r workloads.Request) []message {
	t.Helper()
	var m []message
	if err := json.Unmarshal(r.Messages, &m); err != nil {
		t.Fatalf("messages %s: %v", r.Messages, err)
	}
	return m
}

// turns runs conversation i to its end, answering turn k with
// answer(k), and returns its requests.
func turns(w *workloads.Workload, i int, answer func(k int) string) []workloads.Request {
	c := w.Conversation(i)
	var out []workloads.Request
	for {
		r, ok := c.Next()
		if !ok {
			return out
		}
		out = append(out, r)
		c.Answer(answer(r.Turn))
	}
}

func noAnswer(int) string { return "" }

func first(t *testing.T, w *workloads.Workload, i int) workloads.Request {
	t.Helper()
	r, ok := w.Conversation(i).Next()
	if !ok {
		t.Fatalf("conversation %d has no turn", i)
	}
	return r
}

func TestGeneratedPrompts(t *testing.T) {
	t.Run("completions", func(t *testing.T) {
		w := open(t, workloads.Config{PromptTokens: 8, Seed: 1})
		r := first(t, w, 0)
		if n := len(strings.Fields(r.Text)); n != 8 || r.InputTokens != 8 || r.Messages != nil {
			t.Errorf("request %+v: want 8 words of text, estimate 8, no messages", r)
		}
		if r.MaxTokens != workloads.DefaultMaxTokens || r.Turns != 1 || r.Turn != 0 {
			t.Errorf("request %+v: want max_tokens %d, one turn", r, workloads.DefaultMaxTokens)
		}
		// The words and their order are those the openai load drew
		// before the workloads package: the same seed, the same prompts.
		if want := "plain an step for hour rain unit face"; r.Text != want {
			t.Errorf("seed 1, conversation 0: %q, want %q", r.Text, want)
		}
	})
	t.Run("chat", func(t *testing.T) {
		w := open(t, workloads.Config{Chat: true, MaxTokens: 7})
		r := first(t, w, 3)
		m := messages(t, r)
		if len(m) != 1 || m[0].Role != "user" || len(strings.Fields(m[0].Content)) != workloads.DefaultPromptTokens || r.Text != "" {
			t.Errorf("messages %s: want one user message of %d words", r.Messages, workloads.DefaultPromptTokens)
		}
		if r.MaxTokens != 7 || r.InputTokens != workloads.DefaultPromptTokens || r.Conversation != 3 {
			t.Errorf("request %+v: want max_tokens 7, estimate %d, conversation 3", r, workloads.DefaultPromptTokens)
		}
	})
	t.Run("distinct", func(t *testing.T) {
		w := open(t, workloads.Config{PromptTokens: 16})
		seen := map[string]int{}
		for i := range 200 {
			text := first(t, w, i).Text
			if j, ok := seen[text]; ok {
				t.Fatalf("conversations %d and %d send the same prompt", j, i)
			}
			seen[text] = i
		}
	})
	t.Run("prompts repeat", func(t *testing.T) {
		w := open(t, workloads.Config{PromptTokens: 16, Prompts: 5})
		for i := range 5 {
			if a, b := first(t, w, i).Text, first(t, w, i+5).Text; a != b {
				t.Errorf("prompts = 5: conversation %d sends %q, conversation %d %q", i, a, i+5, b)
			}
		}
		if first(t, w, 0).Text == first(t, w, 1).Text {
			t.Error("prompts = 5: conversations 0 and 1 are the same")
		}
		if s := w.Summary(); s.Conversations != 5 || s.Source != "generated" || s.Turns != 1 {
			t.Errorf("summary %+v", s)
		}
	})
}

func TestDeterministicWithSeed(t *testing.T) {
	cfg := workloads.Config{Chat: true, PromptTokens: 12, Turns: 3, SharedPrefixTokens: 8, PrefixGroups: 2, Seed: 42}
	a, b := open(t, cfg), open(t, cfg)
	answer := func(k int) string { return "answer " + string(rune('a'+k)) }
	// b is asked in another order: a conversation depends on its index
	// and the seed alone.
	want := map[int][]workloads.Request{}
	for _, i := range []int{0, 1, 2, 7, 1 << 30} {
		want[i] = turns(a, i, answer)
	}
	for _, i := range []int{1 << 30, 7, 2, 1, 0} {
		if got := turns(b, i, answer); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("conversation %d differs between two workloads of the same seed", i)
		}
	}
	cfg.Seed = 43
	if got := turns(open(t, cfg), 0, answer); reflect.DeepEqual(got, want[0]) {
		t.Error("seeds 42 and 43 make the same conversation 0")
	}
}

func TestSharedPrefix(t *testing.T) {
	const n, p, q = 300, 32, 16
	w := open(t, workloads.Config{PromptTokens: q, SharedPrefixTokens: p, Prompts: n, Seed: 7})
	var prompts [][]string
	for i := range n {
		r := first(t, w, i)
		if r.InputTokens != p+q {
			t.Fatalf("conversation %d: estimate %d, want %d", i, r.InputTokens, p+q)
		}
		words := strings.Fields(r.Text)
		if len(words) != p+q {
			t.Fatalf("conversation %d: %d words, want %d", i, len(words), p+q)
		}
		prompts = append(prompts, words)
	}
	prefix := strings.Join(prompts[0][:p], " ")
	for i, words := range prompts {
		if got := strings.Join(words[:p], " "); got != prefix {
			t.Fatalf("conversation %d starts %q, want the shared prefix %q", i, got, prefix)
		}
	}
	// Exactly the prefix: no two prompts share a token more.
	next := map[string]int{}
	for i, words := range prompts {
		if j, ok := next[words[p]]; ok {
			t.Fatalf("conversations %d and %d share %d words, more than the prefix", j, i, p+1)
		}
		next[words[p]] = i
	}

	t.Run("groups", func(t *testing.T) {
		const groups = 3
		w := open(t, workloads.Config{PromptTokens: q, SharedPrefixTokens: p, PrefixGroups: groups, Chat: true})
		prefixOf := func(i int) string {
			m := messages(t, first(t, w, i))
			return strings.Join(strings.Fields(m[0].Content)[:p], " ")
		}
		for i := range 30 {
			if prefixOf(i) != prefixOf(i%groups) {
				t.Errorf("conversation %d does not share group %d's prefix", i, i%groups)
			}
		}
		if prefixOf(0) == prefixOf(1) || prefixOf(1) == prefixOf(2) || prefixOf(0) == prefixOf(2) {
			t.Error("groups 0, 1 and 2 do not have distinct prefixes")
		}
	})
	t.Run("later turns", func(t *testing.T) {
		w := open(t, workloads.Config{PromptTokens: q, SharedPrefixTokens: p, Chat: true, Turns: 2})
		rs := turns(w, 0, func(int) string { return "ok" })
		m := messages(t, rs[1])
		if len(strings.Fields(m[2].Content)) != q {
			t.Errorf("turn 2 says %q: want %d words, no prefix (it is in the history)", m[2].Content, q)
		}
	})
}

func TestMultiTurnHistory(t *testing.T) {
	const q = 10
	w := open(t, workloads.Config{Chat: true, PromptTokens: q, Turns: 4})
	// Answers that need escaping, to see them sent back as given.
	answers := []string{"plain answer", "with \"quotes\",\nnew lines and a \\ backslash", "ünïcödé and 表", "last"}
	rs := turns(w, 5, func(k int) string { return answers[k] })
	if len(rs) != 4 {
		t.Fatalf("%d turns, want 4", len(rs))
	}
	var prev []message
	prevTokens := 0
	for k, r := range rs {
		m := messages(t, r)
		if r.Turn != k || r.Turns != 4 || r.Conversation != 5 {
			t.Errorf("turn %d: request says turn %d of %d, conversation %d", k, r.Turn, r.Turns, r.Conversation)
		}
		if len(m) != 2*k+1 {
			t.Fatalf("turn %d sends %d messages, want %d", k, len(m), 2*k+1)
		}
		if k > 0 {
			if !reflect.DeepEqual(m[:len(prev)], prev) {
				t.Errorf("turn %d does not send the history of turn %d", k, k-1)
			}
			if got := m[2*k-1]; got != (message{"assistant", answers[k-1]}) {
				t.Errorf("turn %d sends the answer %+v, want the server's %q", k, got, answers[k-1])
			}
			if want := prevTokens + workloads.EstimateTokens(answers[k-1]) + q; r.InputTokens != want {
				t.Errorf("turn %d: estimate %d, want %d (the history's and the new turn's)", k, r.InputTokens, want)
			}
		}
		if last := m[len(m)-1]; last.Role != "user" || len(strings.Fields(last.Content)) != q {
			t.Errorf("turn %d ends with %+v, want a user message of %d words", k, last, q)
		}
		prev, prevTokens = m, r.InputTokens
	}

	t.Run("unanswered turn ends it", func(t *testing.T) {
		c := w.Conversation(0)
		if _, ok := c.Next(); !ok {
			t.Fatal("no first turn")
		}
		if r, ok := c.Next(); ok {
			t.Errorf("turn %d made before the first was answered", r.Turn)
		}
		c.Answer("late")
		if r, ok := c.Next(); ok {
			t.Errorf("turn %d made after a late answer: the conversation had ended", r.Turn)
		}
	})
	t.Run("concurrent conversations", func(t *testing.T) {
		a, b := w.Conversation(1), w.Conversation(2)
		ra, _ := a.Next()
		rb, _ := b.Next()
		a.Answer("to a")
		b.Answer("to b")
		ra2, _ := a.Next()
		rb2, _ := b.Next()
		if ma := messages(t, ra2); ma[1].Content != "to a" || ma[0] != messages(t, ra)[0] {
			t.Errorf("conversation 1's second turn sends %+v", ma)
		}
		if mb := messages(t, rb2); mb[1].Content != "to b" || mb[0] != messages(t, rb)[0] {
			t.Errorf("conversation 2's second turn sends %+v", mb)
		}
	})
	t.Run("history limit", func(t *testing.T) {
		c := w.Conversation(9)
		c.Next()
		c.Answer(strings.Repeat("x", workloads.MaxHistoryBytes))
		if _, ok := c.Next(); ok || !errors.Is(c.Err(), workloads.ErrHistoryTooLong) {
			t.Errorf("an answer past the history limit: Next goes on, Err %v", c.Err())
		}
	})
}
