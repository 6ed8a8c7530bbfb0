// Package samples writes the sample datasets of examples/datasets: a
// ShareGPT file, JSON lines with per-prompt lengths, and multi-turn
// conversations as JSON lines. Their text is the project's own, made
// here from the word lists and sentence templates below by a seeded
// generator, so the files are the same each time they are made (a test
// keeps the checked-in files equal to Files) and hold no one else's
// text.
package samples

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Files returns each sample dataset by its file name.
func Files() map[string][]byte {
	g := &gen{r: rand.New(rand.NewPCG(2026, 15))}
	return map[string][]byte{
		"sharegpt.json":       g.shareGPT(24),
		"prompts.jsonl":       g.prompts(),
		"conversations.jsonl": g.conversations(8),
	}
}

var topics = []string{
	"a hash table", "a write-ahead log", "TCP keep-alive", "a load balancer",
	"prefix caching in an LLM server", "a B-tree index", "backpressure in a queue",
	"a retry with exponential backoff", "a health check", "connection pooling",
	"rate limiting", "a consistent hash ring", "log rotation", "a graceful shutdown",
	"an SSH tunnel", "a service-level objective", "tail latency", "a cache eviction policy",
	"a rolling deploy", "a database migration", "continuous batching", "a KV cache",
	"speculative decoding", "a circuit breaker",
}

var openers = []string{
	"Explain %s to an engineer who has just joined the team.",
	"What can go wrong with %s under load, and how would you notice?",
	"Write a short checklist for testing %s before a release.",
	"Compare two ways to build %s and say when each one wins.",
	"How would you measure whether %s is working as intended?",
	"Summarize %s in one paragraph, then list the mistakes people make most often with it.",
}

var followUps = []string{
	"Give a concrete example with numbers.",
	"Shorten that to three points.",
	"What would you log to debug it at three in the morning?",
	"Which of those matters most for a small team, and why?",
	"Now explain the same thing to a manager in two sentences.",
	"What would a test that fails for the right reason look like?",
	"What changes when the machine has only two cores?",
}

var things = []string{
	"the p99 latency", "the queue depth", "the error budget", "the retry count",
	"the connection limit", "the cache hit rate", "the disk flush", "the request rate",
	"the memory ceiling", "the clock skew", "the number of open files", "the slowest dependency",
	"the batch size", "the time to first token", "the keep-alive timeout", "the size of the prefix",
}

var sentences = []string{
	"The first thing to check is %[2]s.",
	"In practice %[2]s matters more than %[3]s.",
	"A common mistake is to assume that %[1]s never fails.",
	"Measure %[2]s before and after the change, on the same machine.",
	"When %[1]s misbehaves, %[2]s is usually where it shows first.",
	"Keep %[2]s small and explicit, and write down why.",
	"That is why %[1]s needs a timeout on every wait.",
	"Under load, %[2]s and %[3]s move together, so watch both.",
	"A test should fail when %[2]s goes past its limit, not when the machine is slow.",
	"Start with the simplest version of %[1]s and change one thing at a time.",
	"If %[3]s grows without bound, %[1]s will fall over long before the alarms fire.",
	"Record %[2]s with every run, so that two runs can be compared.",
}

var systems = []string{
	"You are a careful senior engineer. Answer plainly and say what you would measure.",
	"You review designs for a team that runs its own servers. Be brief and concrete.",
}

type gen struct{ r *rand.Rand }

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// reply is an answer about topic of about words words: real replies are
// mostly short with a long tail, so the length is drawn that way.
func (g *gen) reply(topic string) string {
	words := 24 + int(g.r.ExpFloat64()*110)
	var b strings.Builder
	for n := 0; n < words; {
		s := fmt.Sprintf(g.pick(sentences), topic, g.pick(things), g.pick(things))
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		n += len(strings.Fields(s))
	}
	return b.String()
}

type message struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type conversation struct {
	ID            string    `json:"id"`
	Conversations []message `json:"conversations"`
}

// conversation is turns human turns about one topic, each answered.
func (g *gen) conversation(id string, turns int, system bool) conversation {
	topic := g.pick(topics)
	c := conversation{ID: id}
	if system {
		c.Conversations = append(c.Conversations, message{"system", g.pick(systems)})
	}
	for t := range turns {
		q := fmt.Sprintf(g.pick(openers), topic)
		if t > 0 {
			q = g.pick(followUps)
		}
		c.Conversations = append(c.Conversations, message{"human", q}, message{"gpt", g.reply(topic)})
	}
	return c
}

func encode(v any, indent bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		panic(err) // the values above always encode
	}
	return b.Bytes()
}

// shareGPT is n conversations of one to four turns, a few with a
// system message, as an indented JSON array.
func (g *gen) shareGPT(n int) []byte {
	var all []conversation
	for i := range n {
		all = append(all, g.conversation(fmt.Sprintf("sample-%03d", i+1), 1+g.r.IntN(4), i%6 == 5))
	}
	return encode(all, true)
}

type line struct {
	Prompt       string `json:"prompt,omitempty"`
	InputTokens  int    `json:"input_tokens,omitempty"`
	OutputTokens int    `json:"output_tokens"`
}

// prompts is JSON lines with per-prompt lengths: prompts with their
// output length, some with their input length too, and lines that give
// only the lengths (a trace's), for which the load generates a prompt.
func (g *gen) prompts() []byte {
	var b bytes.Buffer
	for i := range 24 {
		topic := g.pick(topics)
		out := 16 + g.r.IntN(240)
		switch {
		case i%3 == 2:
			in := 64 << g.r.IntN(5)
			b.Write(encode(line{InputTokens: in, OutputTokens: out}, false))
		case i%4 == 1:
			p := fmt.Sprintf(g.pick(openers), topic)
			b.Write(encode(line{Prompt: p, InputTokens: len(strings.Fields(p)) * 4 / 3, OutputTokens: out}, false))
		default:
			b.Write(encode(line{Prompt: fmt.Sprintf(g.pick(openers), topic), OutputTokens: out}, false))
		}
	}
	return b.Bytes()
}

// conversations is n multi-turn conversations (three to six turns), one
// ShareGPT conversation a line.
func (g *gen) conversations(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		b.Write(encode(g.conversation(fmt.Sprintf("multi-%02d", i+1), 3+g.r.IntN(4), i%4 == 0), false))
	}
	return b.Bytes()
}
