package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agext/levenshtein"
)

// convo is one conversation of a dataset, as kept: only what its
// requests send, and the lengths of the replies, never their text.
type convo struct {
	record int    // its place in the file (conversation or line number), which seeds a generated line
	system string // its system messages, joined; sent first
	turns  []turn
	// raw is a JSONL messages line, sent as given in one turn, with its
	// estimate and output length (0: the load's).
	raw               json.RawMessage
	rawTokens, rawOut int
}

// turn is one user turn of a dataset conversation.
type turn struct {
	text      string // the user's message
	words     int    // a JSONL line with input_tokens alone: a generated prompt of this many words
	inTokens  int    // the line's input_tokens: the estimate (0: estimated from text)
	outTokens int    // max_tokens for this turn (0: the load's)
}

// size is what MaxKeptBytes counts of a conversation: its text, and 64
// bytes a turn for what holds it.
func (cv *convo) size() int {
	n := len(cv.system) + len(cv.raw) + 64
	for _, t := range cv.turns {
		n += len(t.text) + 64
	}
	return n
}

// Error is a problem with a dataset file, at its place in the file.
type Error struct {
	Path string
	// Line and Column are where the problem is, from 1; 0 when it is
	// the whole file's (Column also when only the line is known).
	Line, Column int
	// Conversation is the ShareGPT conversation's place in the file,
	// from 1, and ID its "id" when it has one; 0 and "" for JSONL lines
	// and the whole file.
	Conversation int
	ID           string
	// Msg says what is wrong and how to fix it.
	Msg string
	// Err is the error beneath, when there is one (reading the file).
	Err error

	// A ShareGPT problem is placed by its byte offset, its line found
	// after the read (locate).
	offset int64
	place  placement
}

type placement int8

const (
	unplaced    placement = iota
	atOffset              // at offset
	valueAfter            // where the value after offset starts
	syntaxAfter           // where the value after offset goes wrong
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Conversation > 0 {
		fmt.Fprintf(&b, "conversation %d", e.Conversation)
		if e.ID != "" {
			fmt.Fprintf(&b, " (id %q)", e.ID)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// maxErrors is how many problems one read reports before it stops:
// enough to see a pattern, few enough to read.
const maxErrors = 10

// errFileTooLarge and errRecordTooLarge are what the readers below
// return past MaxDatasetBytes and MaxRecordBytes.
var (
	errFileTooLarge   = errors.New("file too large")
	errRecordTooLarge = errors.New("record too large")
)

// capReader reads at most left bytes of r, then errFileTooLarge if r
// has more.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, errFileTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func fileTooLarge(path string) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf("the file is larger than %d MiB, the limit: sample it (JSON lines: head -n)", MaxDatasetBytes>>20)}
}

// dataset is what reading a dataset file found.
type dataset struct {
	convos           []convo
	format           Format
	records, skipped int
}

var bom = []byte("\xef\xbb\xbf")

// readDataset reads c.Dataset: its format (told from its first byte
// unless c.Format says), every record checked, the conversations kept
// (a seeded sample of c.Prompts of them when set) in file order.
func readDataset(ctx context.Context, c *Config) (*dataset, error) {
	path := c.Dataset
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Msg: "cannot read the dataset", Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxDatasetBytes {
		return nil, fileTooLarge(path)
	}
	br := bufio.NewReaderSize(&capReader{r: f, left: MaxDatasetBytes}, 64<<10)
	head, _ := br.Peek(br.Size())
	skip := 0
	if bytes.HasPrefix(head, bom) {
		skip = len(bom)
	}
	first := byte(0)
	if i := bytes.IndexFunc(head[skip:], func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }); i >= 0 {
		first = head[skip+i]
	}
	format := c.Format
	switch {
	case first == 0 && len(head) < br.Size():
		return nil, &Error{Path: path, Msg: "the dataset is empty"}
	case format == "" && first == '[':
		format = ShareGPT
	case format == "" && first == '{':
		format = JSONL
	case format == "":
		return nil, &Error{Path: path, Msg: fmt.Sprintf(`neither a ShareGPT file (a JSON array) nor JSON lines (an object a line): it starts with %q; set dataset_format if it is one of them`, firstRune(head[skip:]))}
	case format == ShareGPT && first != '[':
		return nil, &Error{Path: path, Msg: fmt.Sprintf(`a ShareGPT dataset is a JSON array of conversations, and this file starts with %q; for JSON lines set dataset_format = "jsonl" or leave it unset`, firstRune(head[skip:]))}
	case format == JSONL && first != '{':
		return nil, &Error{Path: path, Msg: fmt.Sprintf(`JSON lines hold one JSON object a line, and this file starts with %q; for a ShareGPT array set dataset_format = "sharegpt" or leave it unset`, firstRune(head[skip:]))}
	}
	d := &dataset{format: format}
	s := newSampler(c)
	if format == ShareGPT {
		br.Discard(skip)
		err = readShareGPT(ctx, br, f, int64(skip), path, c, d, s)
		var placed []*Error
		for _, e := range unjoin(err) {
			if de, ok := e.(*Error); ok && de.place != unplaced {
				placed = append(placed, de)
			}
		}
		locate(f, placed)
	} else {
		err = readJSONL(ctx, br, path, c, d, s)
	}
	if err != nil {
		return nil, err
	}
	if err := s.err(path); err != nil {
		return nil, err
	}
	d.convos = s.result()
	if len(d.convos) == 0 {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("no conversation has a turn to send (%d read, all skipped: a turn is a human message followed by a reply, both not empty)", d.records)}
	}
	return d, nil
}

func firstRune(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return ""
	}
	r := []rune(string(b[:min(len(b), 4)]))
	return string(r[:1])
}

// unjoin lists the errors err joins (or err itself).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// sampler keeps the conversations a workload sends: all of them, or a
// uniform sample of n by reservoir sampling (seeded), so that a large
// dataset never needs more memory than the sample.
type sampler struct {
	n     int
	rng   *rand.Rand
	kept  []convo
	seen  int
	bytes int
	over  string // the limit passed, if any
}

// sampleStream seeds the sample, apart from the generated prompts.
const sampleStream = 0x5851f42d4c957f2d

func newSampler(c *Config) *sampler {
	return &sampler{n: c.Prompts, rng: rand.New(rand.NewPCG(uint64(c.Seed), sampleStream))}
}

func (s *sampler) add(cv convo) {
	s.seen++
	if s.over != "" {
		return
	}
	switch {
	case s.n == 0 || len(s.kept) < s.n:
		s.kept = append(s.kept, cv)
		s.bytes += cv.size()
	default:
		j := s.rng.IntN(s.seen)
		if j >= s.n {
			return
		}
		s.bytes += cv.size() - s.kept[j].size()
		s.kept[j] = cv
	}
	switch {
	case len(s.kept) > MaxPrompts:
		s.over = fmt.Sprintf("the dataset holds more than %d conversations, the limit: set prompts to sample fewer (prompts = 1000 takes 1000 of them, chosen by seed)", MaxPrompts)
	case s.bytes > MaxKeptBytes:
		s.over = fmt.Sprintf("the conversations to keep hold more than %d MiB of text, the limit: set prompts to sample fewer (or fewer turns)", MaxKeptBytes>>20)
	}
}

func (s *sampler) err(path string) error {
	if s.over == "" {
		return nil
	}
	return &Error{Path: path, Msg: s.over}
}

// result is the kept conversations in the order of the file.
func (s *sampler) result() []convo {
	slices.SortFunc(s.kept, func(a, b convo) int { return a.record - b.record })
	return s.kept
}

// readJSONL reads one JSON object a line, checking each.
func readJSONL(ctx context.Context, r io.Reader, path string, c *Config, d *dataset, s *sampler) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRecordBytes)
	var errs []error
	line := 0
	for sc.Scan() {
		line++
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, bom)
		}
		lead := len(b) - len(bytes.TrimLeft(b, " \t\r"))
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		d.records++
		cv, ok, e := parseLine(b, c)
		if e != nil {
			e.Path, e.Line = path, line
			if e.Column > 0 {
				e.Column += lead
			}
			if errs = append(errs, e); len(errs) == maxErrors {
				return errors.Join(errs...)
			}
			continue
		}
		if !ok {
			d.skipped++
			continue
		}
		cv.record = line
		s.add(cv)
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			err = &Error{Path: path, Line: line + 1, Msg: fmt.Sprintf("the line is longer than %d MiB, the limit", MaxRecordBytes>>20)}
		case errors.Is(err, errFileTooLarge):
			err = fileTooLarge(path)
		default:
			err = &Error{Path: path, Line: line + 1, Msg: "cannot read the dataset", Err: err}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// jsonlFields are the fields a JSONL line may hold; others are ignored
// (a dataset's ids and metadata), unless one is a misspelling of these.
var jsonlFields = []string{"prompt", "messages", "conversations", "input_tokens", "output_tokens"}

// parseLine reads one JSONL line. A line with a conversation that has
// no turn to send is not kept (ok false, no error).
func parseLine(b []byte, c *Config) (cv convo, ok bool, e *Error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return cv, false, &Error{Column: int(se.Offset), Msg: fmt.Sprintf(`not JSON (%v); each line is one JSON object, such as {"prompt": "...", "output_tokens": 128}`, se)}
		}
		return cv, false, &Error{Msg: `a line must be a JSON object, such as {"prompt": "...", "output_tokens": 128}`}
	}
	if got, want := misspelt(m, jsonlFields); got != "" {
		return cv, false, &Error{Msg: fmt.Sprintf("%q is not a field of a dataset line; did you mean %q?", got, want)}
	}
	var kinds []string
	for _, k := range jsonlFields[:3] {
		if _, ok := m[k]; ok {
			kinds = append(kinds, strconv.Quote(k))
		}
	}
	in, err := wholeNumber(m, "input_tokens")
	if err != nil {
		return cv, false, &Error{Msg: err.Error()}
	}
	out, err := wholeNumber(m, "output_tokens")
	if err != nil {
		return cv, false, &Error{Msg: err.Error()}
	}
	switch {
	case len(kinds) > 1:
		return cv, false, &Error{Msg: fmt.Sprintf(`a line holds one of "prompt", "messages" and "conversations"; this one holds %s`, strings.Join(kinds, " and "))}
	case len(kinds) == 0 && in == 0:
		return cv, false, &Error{Msg: `a line needs "prompt" (text), "messages" (a chat), "conversations" (ShareGPT turns) or "input_tokens" alone (a generated prompt of that length)`}
	}
	switch {
	case m["prompt"] != nil:
		text, ok := jsonString(m["prompt"])
		if !ok {
			return cv, false, &Error{Msg: `"prompt" must be a string`}
		}
		if strings.TrimSpace(text) == "" {
			return cv, false, &Error{Msg: `"prompt" is empty`}
		}
		return convo{turns: []turn{{text: text, inTokens: in, outTokens: out}}}, true, nil
	case m["messages"] != nil:
		if !c.Chat {
			return cv, false, &Error{Msg: `"messages" need a chat endpoint (/v1/chat/completions); for /v1/completions give a "prompt"`}
		}
		tokens, msg := checkMessages(m["messages"])
		if msg != "" {
			return cv, false, &Error{Msg: msg}
		}
		if in > 0 {
			tokens = in
		}
		return convo{raw: m["messages"], rawTokens: tokens, rawOut: out}, true, nil
	case m["conversations"] != nil:
		if in > 0 || out > 0 {
			return cv, false, &Error{Msg: `"input_tokens" and "output_tokens" apply to a prompt, messages or generated line; a conversation's turns take their lengths from its messages`}
		}
		cv, msg := parseMessages(m["conversations"], c)
		if msg != "" {
			return cv, false, &Error{Msg: msg}
		}
		return cv, len(cv.turns) > 0, nil
	}
	return convo{turns: []turn{{words: in, outTokens: out}}}, true, nil
}

// wholeNumber reads m[key] as a token count: a whole number from 1 to
// MaxPromptTokens; 0 when the line does not give one.
func wholeNumber(m map[string]json.RawMessage, key string) (int, error) {
	raw, ok := m[key]
	if !ok {
		return 0, nil
	}
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil || len(raw) == 0 || raw[0] == '"' {
		return 0, fmt.Errorf("%q must be a number of tokens, not %s", key, clip(raw))
	}
	n, err := strconv.Atoi(num.String())
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q must be a whole number of tokens, not %s", key, num)
	case n < 1 || n > MaxPromptTokens:
		return 0, fmt.Errorf("%q is %d; it must be from 1 to %d", key, n, MaxPromptTokens)
	}
	return n, nil
}

// jsonString reads raw as a JSON string; null is not one.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// clip shows a JSON value in an error, shortened.
func clip(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// misspelt returns a key of m that is not one of known but is within
// two edits of one that m lacks, and that one: "output_token" for
// "output_tokens" would otherwise be ignored, and the requests sent
// with the load's max_tokens instead.
func misspelt(m map[string]json.RawMessage, known []string) (got, want string) {
	for k := range m {
		if slices.Contains(known, k) {
			continue
		}
		for _, w := range known {
			if _, present := m[w]; present {
				continue
			}
			if levenshtein.Distance(strings.ToLower(k), w, nil) <= 2 && (got == "" || k < got) {
				got, want = k, w
			}
		}
	}
	return got, want
}

// checkMessages checks a chat's messages as a JSONL line gives them (a
// list of objects each with a string "role"; content a string, a list
// of parts, or null) and estimates their tokens.
func checkMessages(raw json.RawMessage) (tokens int, msg string) {
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return 0, `"messages" must be a list of {"role": ..., "content": ...} objects`
	}
	if len(msgs) == 0 {
		return 0, `"messages" is empty`
	}
	for i, m := range msgs {
		role, ok := jsonString(m["role"])
		if m == nil || !ok || role == "" {
			return 0, fmt.Sprintf(`message %d has no "role" (a string such as "user")`, i+1)
		}
		var content any
		if err := json.Unmarshal(m["content"], &content); m["content"] != nil && err != nil {
			return 0, fmt.Sprintf(`message %d: "content" must be a string or a list of parts`, i+1)
		}
		switch v := content.(type) {
		case string:
			tokens += EstimateTokens(v)
		case []any:
			for _, p := range v {
				if part, ok := p.(map[string]any); ok {
					if s, ok := part["text"].(string); ok {
						tokens += EstimateTokens(s)
					}
				}
			}
		case nil:
		default:
			return 0, fmt.Sprintf(`message %d: "content" must be a string or a list of parts`, i+1)
		}
	}
	return tokens, ""
}

// readShareGPT reads a JSON array of conversations as a stream: one
// conversation at a time is decoded, checked and kept or dropped.
// Offsets are from the start of the file, where r is at base; file
// gives a conversation's bytes again when it must be read field by
// field for its error.
func readShareGPT(ctx context.Context, r io.Reader, file io.ReaderAt, base int64, path string, c *Config, d *dataset, s *sampler) error {
	w := &recordWindow{r: r}
	dec := json.NewDecoder(w)
	w.dec = dec
	if _, err := dec.Token(); err != nil { // the '[' readDataset saw
		return &Error{Path: path, Msg: "cannot read the dataset", Err: err}
	}
	var errs []error
	for k := 1; dec.More(); k++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		before := base + dec.InputOffset()
		// The common case is decoded straight from the stream; a
		// conversation that does not fit is read again, field by field,
		// for the error that says which.
		var rec shareGPTRecord
		err := dec.Decode(&rec)
		var te *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &te) {
			return errors.Join(append(errs, streamError(path, k, before, err))...)
		}
		after := base + dec.InputOffset()
		if after-before > MaxRecordBytes {
			return errors.Join(append(errs, streamError(path, k, before, errRecordTooLarge))...)
		}
		d.records++
		var cv convo
		var id, msg string
		start := before
		if err == nil && rec.Conversations != nil && complete(*rec.Conversations) {
			if cv, msg = turnsOf(*rec.Conversations, c); msg != "" {
				id = idText(rec.ID)
			}
		} else {
			var raw []byte
			if raw, start, err = recordAt(file, before, after); err != nil {
				return errors.Join(append(errs, &Error{Path: path, Conversation: k, Msg: "cannot read the dataset", Err: err})...)
			}
			cv, id, msg = parseShareGPT(raw, c)
		}
		if msg != "" {
			e := &Error{Path: path, Conversation: k, ID: id, Msg: msg, offset: start, place: valueAfter}
			if errs = append(errs, e); len(errs) == maxErrors {
				return errors.Join(errs...)
			}
			continue
		}
		if len(cv.turns) == 0 {
			d.skipped++
			continue
		}
		cv.record = k
		s.add(cv)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return errors.Join(append(errs, streamError(path, d.records+1, base+dec.InputOffset(), err))...)
	}
	end := base + dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		errs = append(errs, &Error{Path: path, Msg: "more after the array's closing ]: a ShareGPT file is one JSON array", offset: end, place: valueAfter})
	}
	return errors.Join(errs...)
}

// recordAt reads the value between byte offsets before and after of
// file again, without the separators before it, and where it starts.
func recordAt(file io.ReaderAt, before, after int64) ([]byte, int64, error) {
	b := make([]byte, after-before)
	if _, err := file.ReadAt(b, before); err != nil {
		return nil, 0, err
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n,")
	return trimmed, before + int64(len(b)-len(trimmed)), nil
}

// streamError is the error of decoding conversation k, which starts
// after byte offset before: a syntax error is placed where the decoder
// stopped (recorded in offset for locate).
func streamError(path string, k int, before int64, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, errRecordTooLarge):
		return &Error{Path: path, Conversation: k, Msg: fmt.Sprintf("longer than %d MiB, the limit", MaxRecordBytes>>20), offset: before, place: valueAfter}
	case errors.Is(err, errFileTooLarge):
		return fileTooLarge(path)
	case errors.As(err, &se):
		return &Error{Path: path, Conversation: k, Msg: fmt.Sprintf("not JSON: %v", se), offset: before, place: syntaxAfter}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &Error{Path: path, Conversation: k, Msg: "the file ends inside the array: is it cut short?", offset: before, place: valueAfter}
	}
	return &Error{Path: path, Msg: "cannot read the dataset", Err: err}
}

// recordWindow refuses to read further once the decoder holds more
// than MaxRecordBytes of one value: encoding/json buffers a value whole.
type recordWindow struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
}

func (w *recordWindow) Read(p []byte) (int, error) {
	if w.read-w.dec.InputOffset() > MaxRecordBytes {
		return 0, errRecordTooLarge
	}
	n, err := w.r.Read(p)
	w.read += int64(n)
	return n, err
}

// parseShareGPT reads one conversation of a ShareGPT file, {"id": ...,
// "conversations": [...]}, field by field: for a conversation that
// shareGPTRecord does not fit, to say why.
func parseShareGPT(raw json.RawMessage, c *Config) (cv convo, id, msg string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return cv, "", `a conversation must be a JSON object, {"conversations": [{"from": "human", "value": "..."}, ...]}`
	}
	id = idText(m["id"])
	conv, ok := m["conversations"]
	if !ok {
		if got, _ := misspelt(m, []string{"conversations"}); got != "" {
			return cv, id, fmt.Sprintf(`%q is not a ShareGPT field; did you mean "conversations"?`, got)
		}
		return cv, id, `it has no "conversations" (the list of {"from", "value"} messages)`
	}
	cv, msg = parseMessages(conv, c)
	return cv, id, msg
}

// idText shows a conversation's "id" in an error.
func idText(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	if s, ok := jsonString(raw); ok {
		return s
	}
	return clip(raw)
}

// shareGPTRecord is one conversation of a ShareGPT file as the common
// case has it.
type shareGPTRecord struct {
	ID            json.RawMessage    `json:"id"`
	Conversations *[]shareGPTMessage `json:"conversations"`
}

// shareGPTMessage is one message of a ShareGPT conversation; a field
// missing, null or not a string is nil.
type shareGPTMessage struct {
	From  *string `json:"from"`
	Value *string `json:"value"`
}

func complete(msgs []shareGPTMessage) bool {
	for _, m := range msgs {
		if m.From == nil || m.Value == nil {
			return false
		}
	}
	return true
}

// speakers maps ShareGPT's "from" values, the original's and those of
// the datasets made like it, to chat roles.
var speakers = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "bing": "assistant", "bard": "assistant", "model": "assistant",
	"system": "system",
}

// parseMessages reads a ShareGPT message list into turns (turnsOf),
// checking each message.
func parseMessages(raw json.RawMessage, c *Config) (cv convo, msg string) {
	var fast []shareGPTMessage
	if json.Unmarshal(raw, &fast) == nil && complete(fast) {
		return turnsOf(fast, c)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return cv, `"conversations" must be a list of {"from": "human" or "gpt", "value": "..."} messages`
	}
	msgs := make([]shareGPTMessage, len(list))
	for i, item := range list {
		var m map[string]json.RawMessage
		if json.Unmarshal(item, &m) != nil || m == nil {
			return cv, fmt.Sprintf(`message %d must be an object {"from": ..., "value": ...}`, i+1)
		}
		if got, want := misspelt(m, []string{"from", "value"}); got != "" {
			return cv, fmt.Sprintf(`message %d: %q is not a ShareGPT field; did you mean %q?`, i+1, got, want)
		}
		if _, ok := m["from"]; !ok {
			return cv, fmt.Sprintf(`message %d has no "from" (who speaks: "human" or "gpt")`, i+1)
		}
		from, ok := jsonString(m["from"])
		if !ok {
			return cv, fmt.Sprintf(`message %d: "from" must be a string such as "human" or "gpt", not %s`, i+1, clip(m["from"]))
		}
		if _, ok := m["value"]; !ok {
			return cv, fmt.Sprintf(`message %d has no "value" (its text)`, i+1)
		}
		value, ok := jsonString(m["value"])
		if !ok {
			return cv, fmt.Sprintf(`message %d: "value" must be a string, not %s`, i+1, clip(m["value"]))
		}
		msgs[i] = shareGPTMessage{&from, &value}
	}
	return turnsOf(msgs, c)
}

// turnsOf groups a conversation's messages into turns. A turn is the
// human messages in a row (joined) and the replies that follow them,
// whose estimated length is the turn's max_tokens, as bench_serving
// takes its output lengths from the gpt turns. System messages are sent
// first, joined; replies before the first human message answer nothing
// and are dropped. A turn with no reply or an empty side, and every one
// after it, is not kept (the history would have a gap); nor are turns
// past c.Turns. Every message's speaker is checked all the same.
func turnsOf(msgs []shareGPTMessage, c *Config) (cv convo, msg string) {
	var system, asked []string
	reply, replied, cut := 0, false, false
	emit := func() {
		text := strings.Join(asked, "\n\n")
		switch {
		case cut:
		case strings.TrimSpace(text) == "" || reply == 0:
			cut = true
		case len(cv.turns) < max(c.Turns, 1):
			cv.turns = append(cv.turns, turn{text: text, outTokens: min(reply, MaxPromptTokens)})
		}
		asked, reply, replied = nil, 0, false
	}
	for i, m := range msgs {
		from, value := *m.From, *m.Value
		switch speakers[strings.ToLower(from)] {
		case "system":
			if strings.TrimSpace(value) != "" {
				system = append(system, value)
			}
		case "user":
			if replied {
				emit()
			}
			asked = append(asked, value)
		case "assistant":
			if len(asked) > 0 && !cut {
				reply += EstimateTokens(value)
				replied = true
			}
		default:
			return convo{}, fmt.Sprintf(`message %d: "from" is %q; ShareGPT speakers are "human" (or "user"), "gpt" (or "assistant", "chatgpt", "bing", "bard", "model") and "system"`, i+1, from)
		}
	}
	if replied {
		emit()
	}
	cv.system = strings.Join(system, "\n\n")
	return cv, ""
}

// locate fills in the line and column of each error from its byte
// offset, in one pass over the file. A syntax error's value is decoded
// again alone, from its start, where encoding/json places the error
// exactly (in a stream its offsets drift).
func locate(f *os.File, errs []*Error) {
	for _, e := range errs {
		switch e.place {
		case valueAfter:
			e.offset = valueStart(f, e.offset)
		case syntaxAfter:
			e.offset = syntaxOffset(f, e.offset)
		}
	}
	slices.SortFunc(errs, func(a, b *Error) int { return int(a.offset - b.offset) })
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	line, col, off := 1, 1, int64(0)
	for _, e := range errs {
		for ; off < e.offset; off++ {
			b, err := r.ReadByte()
			if err != nil {
				break
			}
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		e.Line, e.Column = line, col
	}
}

// valueStart is where the JSON value after byte offset from starts:
// past the blanks and the comma before it.
func valueStart(f *os.File, from int64) int64 {
	_, skipped := skipSeparators(bufio.NewReader(io.NewSectionReader(f, from, 1<<20)))
	return from + skipped
}

func skipSeparators(r *bufio.Reader) (*bufio.Reader, int64) {
	skipped := int64(0)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return r, skipped
		}
		if !strings.ContainsRune(" \t\r\n,", rune(b)) {
			r.UnreadByte()
			return r, skipped
		}
		skipped++
	}
}

// syntaxOffset is where the JSON value after byte offset from goes
// wrong, else where it starts.
func syntaxOffset(f *os.File, from int64) int64 {
	r, skipped := skipSeparators(bufio.NewReader(io.NewSectionReader(f, from, MaxRecordBytes+1<<20)))
	var raw json.RawMessage
	err := json.NewDecoder(r).Decode(&raw)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return from + skipped + se.Offset - 1
	}
	return from + skipped
}
