package workloads

import "lockstep/limits"

// The limits below bound what a workload may hold, so that no dataset
// and no configuration makes a load exhaust memory before it sends its
// first request: a dataset is read as a stream, record by record, and
// only what the requests need is kept (a ShareGPT reply's length, never
// its text). Each is documented in the README (Benchmarks, Workloads).
const (
	// MaxDatasetBytes is the size of a dataset file. ShareGPT V3 (the
	// file bench_serving downloads) is 642 MB; reading a file is a
	// stream, so the bound is on the time it takes: 13 to 33 MB/s
	// measured on a shared 2-core machine (a 50 MB ShareGPT file).
	MaxDatasetBytes = 1 << 30
	// MaxRecordBytes is the size of one JSONL line or one ShareGPT
	// conversation: what the decoder buffers at once. A prompt of a
	// million tokens is about 4 MiB of text.
	MaxRecordBytes = 16 << 20
	// MaxKeptBytes is the text kept from a dataset (prompts and the
	// messages lines as given): the plans' string limit. A dataset
	// holding more is refused with a hint to sample fewer (prompts).
	MaxKeptBytes = limits.MaxStringBytes
	// MaxPrompts is how many distinct conversations a workload holds
	// (prompts, and the conversations kept from a dataset): the plans'
	// element limit.
	MaxPrompts = limits.MaxElements
	// MaxTurns is how many user turns one conversation sends.
	MaxTurns = 1000
	// MaxPromptTokens is the length of one generated prompt or shared
	// prefix (prompt_tokens, shared_prefix_tokens, a JSONL line's
	// input_tokens), and of one request's output (max_tokens,
	// output_tokens).
	MaxPromptTokens = 1 << 20
	// MaxPrefixTokens is what the shared prefixes hold together
	// (prefix_groups × shared_prefix_tokens): they are made once, at
	// about 5.5 bytes a token.
	MaxPrefixTokens = 8 << 20
	// MaxHistoryBytes is what one conversation's history may grow to
	// (its messages, the server's answers included) before it ends: a
	// server that answers without end cannot make the client hold it.
	MaxHistoryBytes = 64 << 20
)
