// Package workloads makes what an LLM load sends: conversations of one
// or more turns, generated (seeded words, optionally behind a shared
// prefix) or read from a dataset (ShareGPT JSON, or JSON lines with
// per-prompt input and output lengths). It is the one way the openai
// load makes its prompts.
//
// Start reading at Open (workloads.go): a Config, checked whole, makes a
// Workload; Workload.Conversation(i) is conversation i, the same for
// the same i and seed; Conversation.Next makes its next turn's Request
// (the text or messages to send, max_tokens, an input-token estimate),
// and Conversation.Answer gives the server's answer back, which the
// next turn sends as the assistant's message. A conversation's turns
// are sequential; conversations are independent and run concurrently.
// Datasets are read in dataset.go, as a stream with bounded memory
// (limits.go), every record checked before a request is sent.
//
// # The openai load's attributes
//
// Config's fields are these attributes of load "openai", decoded:
//
//	dataset              path of a ShareGPT or JSONL file; unset: generated prompts
//	dataset_format       "sharegpt" | "jsonl"; unset: told from the file's first byte ([ or {)
//	prompt_tokens        a generated user turn's tokens (default 128)
//	shared_prefix_tokens every generated prompt starts with the same prefix of this many tokens
//	prefix_groups        how many distinct prefixes (default 1); conversation i has prefix i mod groups
//	prompts              distinct conversations: generated ones repeat after it; a dataset's are sampled (seeded)
//	turns                user turns a conversation sends (default 1); > 1 needs /v1/chat/completions
//	max_tokens           max_tokens of a turn whose dataset gives no output length (default 128)
//	seed                 the generated prompts and the sample
//
// prompt_tokens, shared_prefix_tokens and prefix_groups shape generated
// prompts and are refused with a dataset. prompts_file is replaced by
// dataset: a JSONL file of {"prompt"} or {"messages"} lines reads the
// same.
//
// # Datasets
//
// ShareGPT: a JSON array of {"id": ..., "conversations": [{"from":
// "human", "value": "..."}, {"from": "gpt", "value": "..."}, ...]}. As in
// SGLang's and vLLM's bench_serving, a turn's output length (its
// max_tokens) is the length of the gpt reply that follows it, and with
// turns = 1 (the default) only the first human turn is sent; with more,
// each turn sends the history so far, the server's own answers in place
// of the dataset's. Human messages in a row are one turn; system
// messages are sent first; a conversation with no human message followed
// by a reply is skipped (Summary.Skipped counts them).
//
// JSONL: one object a line, one of
//
//	{"prompt": "...", "output_tokens": 64, "input_tokens": 12}  text; input_tokens, when given, is the estimate
//	{"messages": [{"role": "user", "content": "..."}], "output_tokens": 64}  sent as given (chat only)
//	{"conversations": [...]}  a ShareGPT conversation, for multi-turn JSON lines
//	{"input_tokens": 512, "output_tokens": 64}  a generated prompt of that length (a trace's lengths)
//
// Other fields are ignored, unless they are a misspelling of these.
//
// Exact output lengths need a server that does not stop early: send
// extra_body = { ignore_eos = true } (vLLM, SGLang), as bench_serving
// does by default.
//
// The sample datasets in examples/datasets are made by
// internal/samples; go generate remakes them.
package workloads

//go:generate go run ./internal/samples/gen -o ../examples/datasets
