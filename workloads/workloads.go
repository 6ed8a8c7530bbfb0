package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Format is a dataset file's format.
type Format string

const (
	// ShareGPT is a JSON array of conversations, each
	// {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}]}.
	ShareGPT Format = "sharegpt"
	// JSONL is one JSON object a line: {"prompt"}, {"messages"},
	// {"conversations"} or {"input_tokens"}, with an optional
	// "output_tokens" (see the package documentation).
	JSONL Format = "jsonl"
)

// DefaultMaxTokens is a request's max_tokens when neither the dataset
// nor the load says, and DefaultPromptTokens a generated prompt's
// length when the load does not say: bench_serving's random dataset
// uses the same pair of lengths as its example.
const (
	DefaultMaxTokens    = 128
	DefaultPromptTokens = 128
)

// Config says which workload to make. Its fields are the openai load's
// attributes (named in the comments) after the load has decoded them;
// zero values mean the attribute is unset.
type Config struct {
	// Dataset is a ShareGPT or JSONL file (dataset); empty makes the
	// prompts (prompt_tokens words each, seeded).
	Dataset string
	// Format is the dataset's format (dataset_format); empty tells it
	// from the file: a JSON array is ShareGPT, an object is JSONL.
	Format Format
	// Chat says the requests go to /v1/chat/completions: a request
	// carries Messages, else Text. The load knows it from its URL.
	Chat bool
	// PromptTokens is a generated user turn's length in tokens
	// (prompt_tokens, default 128), after the shared prefix if any.
	PromptTokens int
	// SharedPrefixTokens makes every generated prompt start with the
	// same prefix of this many tokens (shared_prefix_tokens), to see a
	// server's prefix cache: bench_serving's generated-shared-prefix.
	SharedPrefixTokens int
	// PrefixGroups is how many distinct shared prefixes there are
	// (prefix_groups, default 1): conversation i starts with prefix
	// i mod PrefixGroups, so the groups take turns.
	PrefixGroups int
	// Prompts is how many distinct conversations there are (prompts):
	// generated ones repeat after it; from a dataset, that many are
	// sampled (seeded), and all are used when it is unset or larger.
	Prompts int
	// Turns is how many user turns a conversation sends (turns,
	// default 1): generated conversations have this many; a dataset's
	// conversations are cut to it (bench_serving sends the first turn).
	Turns int
	// MaxTokens is max_tokens for a turn whose dataset gives no output
	// length (max_tokens, default DefaultMaxTokens).
	MaxTokens int
	// Seed makes the generated prompts and the sample (seed).
	Seed int64
}

// Request is what one request sends. Exactly one of Text and Messages
// is set: Messages when Config.Chat, Text otherwise. Both are shared:
// the load must not modify them.
type Request struct {
	// Conversation is the index the conversation was asked for with
	// (Workload.Conversation), and Turn this turn's place in it, from 0;
	// Turns is how many turns the conversation has.
	Conversation, Turn, Turns int
	// Text is the prompt for /v1/completions.
	Text string
	// Messages is the JSON array of chat messages for
	// /v1/chat/completions: the conversation so far, the server's own
	// answers to the earlier turns included, and this turn's message.
	Messages json.RawMessage
	// MaxTokens is the max_tokens to send: the dataset's output length
	// for this turn, else Config.MaxTokens.
	MaxTokens int
	// InputTokens estimates the tokens the request sends (see
	// EstimateTokens), for when the server reports no usage. Generated
	// prompts are exact in common tokenizers: one token a word.
	InputTokens int
}

// Summary says what a workload holds, for the record's notes.
type Summary struct {
	// Source is "generated" or the dataset's path, and Format the
	// dataset's format as read (empty for generated prompts).
	Source string
	Format Format
	// Conversations is how many distinct conversations there are (0:
	// generated without end), and Turns the most turns one sends.
	Conversations, Turns int
	// Records is how many conversations (or JSONL lines) the dataset
	// holds; Skipped how many of them had no turn to send (no human
	// message followed by a reply, or an empty one): bench_serving skips
	// those too.
	Records, Skipped int
}

// Workload makes the requests of a load: conversations of one or more
// turns, made from a dataset or generated. It is safe for concurrent
// use: it does not change after Open, and each Conversation holds its
// own state.
type Workload struct {
	cfg      Config
	convos   []convo  // from a dataset; nil when generated
	prefixes []string // the shared prefixes, one a group
	summary  Summary
}

// Open checks c and makes its workload; with a dataset, it reads and
// checks the whole file first, so that a bad line is an error before
// any request is sent. An error in the file is an *Error (or several,
// joined), at its line and, for ShareGPT, its conversation.
func Open(ctx context.Context, c Config) (*Workload, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Turns == 0 {
		c.Turns = 1
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	w := &Workload{cfg: c}
	if c.Dataset != "" {
		d, err := readDataset(ctx, &c)
		if err != nil {
			return nil, err
		}
		w.convos = d.convos
		w.summary = Summary{Source: c.Dataset, Format: d.format, Conversations: len(d.convos), Records: d.records, Skipped: d.skipped}
		for i := range d.convos {
			w.summary.Turns = max(w.summary.Turns, w.conversationTurns(&d.convos[i]))
		}
		return w, nil
	}
	if w.cfg.PromptTokens == 0 {
		w.cfg.PromptTokens = DefaultPromptTokens
	}
	if c.SharedPrefixTokens > 0 {
		w.cfg.PrefixGroups = max(c.PrefixGroups, 1)
		for g := range w.cfg.PrefixGroups {
			w.prefixes = append(w.prefixes, prefixText(c.Seed, g, c.SharedPrefixTokens))
		}
	}
	w.summary = Summary{Source: "generated", Conversations: c.Prompts, Turns: c.Turns}
	return w, nil
}

// Check reports every problem with c at once (what validate can know: the
// file itself is read by Open), each naming the
// attribute as the plan spells it.
func (c Config) Check() error {
	var errs []error
	if c.PromptTokens < 0 || c.SharedPrefixTokens < 0 || c.PrefixGroups < 0 || c.Prompts < 0 || c.Turns < 0 || c.MaxTokens < 0 {
		errs = append(errs, errors.New("prompt_tokens, shared_prefix_tokens, prefix_groups, prompts, turns and max_tokens must not be negative"))
	}
	for _, l := range []struct {
		name       string
		value, max int
	}{
		{"prompt_tokens", c.PromptTokens, MaxPromptTokens},
		{"shared_prefix_tokens", c.SharedPrefixTokens, MaxPromptTokens},
		{"max_tokens", c.MaxTokens, MaxPromptTokens},
		{"prompts", c.Prompts, MaxPrompts},
		{"prefix_groups", c.PrefixGroups, MaxPrompts},
		{"turns", c.Turns, MaxTurns},
	} {
		if l.value > l.max {
			errs = append(errs, fmt.Errorf("%s = %d is more than %d, the limit", l.name, l.value, l.max))
		}
	}
	switch c.Format {
	case "", ShareGPT, JSONL:
	default:
		errs = append(errs, fmt.Errorf(`dataset_format %q: must be "sharegpt" or "jsonl", or unset to tell it from the file`, c.Format))
	}
	if c.Format != "" && c.Dataset == "" {
		errs = append(errs, errors.New("dataset_format needs a dataset"))
	}
	if c.Dataset != "" && (c.PromptTokens > 0 || c.SharedPrefixTokens > 0 || c.PrefixGroups > 0) {
		errs = append(errs, errors.New("prompt_tokens, shared_prefix_tokens and prefix_groups shape generated prompts; a dataset brings its own (put a shared prefix in the dataset)"))
	}
	if c.PrefixGroups > 0 && c.SharedPrefixTokens == 0 {
		errs = append(errs, errors.New("prefix_groups needs shared_prefix_tokens, the length of each group's prefix"))
	}
	if c.Prompts > 0 && c.PrefixGroups > c.Prompts {
		errs = append(errs, fmt.Errorf("prefix_groups = %d is more than prompts = %d: some prefixes would never be sent", c.PrefixGroups, c.Prompts))
	}
	if g := max(c.PrefixGroups, 1); c.SharedPrefixTokens <= MaxPromptTokens && g <= MaxPrompts && g*c.SharedPrefixTokens > MaxPrefixTokens {
		errs = append(errs, fmt.Errorf("prefix_groups × shared_prefix_tokens = %d tokens is more than %d, the limit: use fewer groups or a shorter prefix", g*c.SharedPrefixTokens, MaxPrefixTokens))
	}
	if c.Turns > 1 && !c.Chat {
		errs = append(errs, errors.New("turns > 1 needs a chat endpoint (/v1/chat/completions): each turn sends the conversation so far as messages"))
	}
	return errors.Join(errs...)
}

// Summary says what w holds.
func (w *Workload) Summary() Summary { return w.summary }

// Conversation returns conversation i (i ≥ 0): the same i gives the
// same conversation, whatever else was asked before. Generated
// conversations repeat after Config.Prompts, when set; a dataset's
// repeat after its last one. A load that sends one request at a time
// per conversation asks for conversation 0, 1, 2, ... as it starts them
// (warm-up from a far index, so the measured ones are the same).
func (w *Workload) Conversation(i int) *Conversation {
	c := &Conversation{w: w, index: i}
	if w.convos != nil {
		c.src = &w.convos[i%len(w.convos)]
		c.turns = w.conversationTurns(c.src)
		return c
	}
	c.content = i
	if w.cfg.Prompts > 0 {
		c.content = i % w.cfg.Prompts
	}
	c.turns = w.cfg.Turns
	return c
}

func (w *Workload) conversationTurns(cv *convo) int {
	if cv.raw != nil {
		return 1
	}
	return min(len(cv.turns), w.cfg.Turns)
}

// Conversation is one conversation's turns, made one at a time: each
// turn's messages are the history so far (the server's answers
// included) and the turn's own message. Its turns are sequential, so it
// is used by one goroutine at a time; conversations are independent of
// each other and run concurrently.
type Conversation struct {
	w       *Workload
	index   int
	content int    // the generated content's index (index mod prompts)
	src     *convo // from a dataset; nil when generated
	rng     *rand.Rand
	turns   int
	turn    int  // the next turn to make
	waiting bool // a turn was made and not yet answered

	// hist is the messages sent so far as a JSON array without its
	// closing bracket, and histTokens their estimate. Kept only when a
	// later turn will send them.
	hist       []byte
	histTokens int
	err        error
}

// ErrHistoryTooLong ends a conversation whose history grew past
// MaxHistoryBytes.
var ErrHistoryTooLong = fmt.Errorf("the conversation's history is longer than %d MiB, the limit", MaxHistoryBytes>>20)

// Turns is how many turns the conversation sends.
func (c *Conversation) Turns() int { return c.turns }

// Next returns the conversation's next turn, or false when it has none
// left. After the first, a turn follows only once Answer has given the
// server's answer to the one before: a turn left unanswered (its
// request failed) ends the conversation for good, since the history its
// next turn would send was never the server's.
func (c *Conversation) Next() (Request, bool) {
	if c.waiting {
		// The last turn failed: the conversation ends there.
		c.turn, c.waiting, c.hist = c.turns, false, nil
	}
	if c.turn >= c.turns || c.err != nil {
		return Request{}, false
	}
	req := Request{Conversation: c.index, Turn: c.turn, Turns: c.turns, MaxTokens: c.w.cfg.MaxTokens}
	if c.src != nil && c.src.raw != nil {
		req.Messages, req.InputTokens = c.src.raw, c.src.rawTokens
		if c.src.rawOut > 0 {
			req.MaxTokens = c.src.rawOut
		}
		c.turn++
		return req, true
	}
	text, tokens, out := c.userTurn()
	if out > 0 {
		req.MaxTokens = out
	}
	if !c.w.cfg.Chat {
		req.Text, req.InputTokens = text, tokens
		c.turn++
		return req, true
	}
	system := ""
	if c.turn == 0 && c.src != nil {
		system = c.src.system
	}
	if len(c.hist)+len(system)+len(text)+64 > MaxHistoryBytes {
		c.err, c.hist = ErrHistoryTooLong, nil
		return Request{}, false
	}
	msgs := make([]byte, 0, len(c.hist)+len(system)+len(text)+64)
	if c.turn == 0 {
		msgs = append(msgs, '[')
		if system != "" {
			msgs = append(appendMessage(msgs, "system", system), ',')
			c.histTokens = EstimateTokens(system)
		}
	} else {
		msgs = append(append(msgs, c.hist...), ',')
	}
	msgs = appendMessage(msgs, "user", text)
	c.histTokens += tokens
	req.Messages = append(msgs, ']')
	req.InputTokens = c.histTokens
	c.turn++
	if c.turn < c.turns {
		// The next turn sends these messages again, and the answer.
		c.hist = msgs[:len(msgs):len(msgs)]
		c.waiting = true
	} else {
		c.hist = nil
	}
	return req, true
}

// Answer gives the server's answer to the turn Next returned last; the
// next turn sends it as the assistant's message. Answering a turn that
// is not waiting for one (the last turn, or twice) does nothing.
func (c *Conversation) Answer(text string) {
	if !c.waiting {
		return
	}
	c.waiting = false
	if len(c.hist)+len(text)+64 > MaxHistoryBytes {
		c.err, c.hist = ErrHistoryTooLong, nil
		return
	}
	c.hist = appendMessage(append(c.hist, ','), "assistant", text)
	c.histTokens += EstimateTokens(text)
}

// Err says why the conversation ended before its last turn, when the
// workload ended it (ErrHistoryTooLong); nil otherwise.
func (c *Conversation) Err() error { return c.err }

// userTurn makes the user message of the next turn: its text, its
// token estimate and its output length (0: the load's).
func (c *Conversation) userTurn() (text string, tokens, out int) {
	if c.src != nil {
		t := &c.src.turns[c.turn]
		text, tokens = t.text, t.inTokens
		if t.words > 0 {
			text = generate(uint64(c.w.cfg.Seed)^datasetStream, c.src.record, t.words)
			tokens = t.words
		}
		if tokens == 0 {
			tokens = EstimateTokens(text)
		}
		return text, tokens, t.outTokens
	}
	cfg := &c.w.cfg
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(c.content)))
	}
	if c.turn == 0 && c.w.prefixes != nil {
		return c.prefixed(), cfg.SharedPrefixTokens + cfg.PromptTokens, 0
	}
	var b strings.Builder
	b.Grow(cfg.PromptTokens * 6)
	appendWords(&b, c.rng, cfg.PromptTokens)
	return b.String(), cfg.PromptTokens, 0
}

// prefixed is the first turn of a shared-prefix conversation: its
// group's prefix, then its own words. The first of those is chosen so
// that of any len(promptWords) conversations in a row no two share
// more than the prefix; the rest are drawn as in any generated prompt.
func (c *Conversation) prefixed() string {
	cfg := &c.w.cfg
	prefix := c.w.prefixes[c.content%len(c.w.prefixes)]
	var b strings.Builder
	b.Grow(len(prefix) + cfg.PromptTokens*6)
	b.WriteString(prefix)
	b.WriteByte(' ')
	first := (c.content + int(uint64(cfg.Seed)%uint64(len(promptWords)))) % len(promptWords)
	b.WriteString(promptWords[first])
	if cfg.PromptTokens > 1 {
		b.WriteByte(' ')
		appendWords(&b, c.rng, cfg.PromptTokens-1)
	}
	return b.String()
}

// appendMessage appends {"role": role, "content": content} as JSON.
func appendMessage(b []byte, role, content string) []byte {
	b = append(b, `{"role":"`...)
	b = append(b, role...)
	b = append(b, `","content":`...)
	return append(appendJSONString(b, content), '}')
}

// appendJSONString appends s as a JSON string. Text of printable ASCII
// without quotes or backslashes (every generated prompt) is copied as
// it is; anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// EstimateTokens guesses how many tokens a text is, for a server that
// reports no usage: the larger of its words and a quarter of its bytes
// (English prose is about 1.3 tokens a word and 4 bytes a token in
// common tokenizers; code and text without spaces are nearer the byte
// count). It is a guess: the server's usage, when it reports one, is
// what the metrics count.
func EstimateTokens(s string) int {
	words, inWord := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			inWord = false
		default:
			if !inWord {
				words++
			}
			inWord = true
		}
	}
	return max(words, (len(s)+3)/4)
}
