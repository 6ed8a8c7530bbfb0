package workloads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lockstep/workloads"
	"lockstep/workloads/internal/samples"
)

// sent is what one turn of a conversation sends, in short.
type sent struct {
	Text      string    // completions
	Messages  []message // chat
	MaxTokens int
	Tokens    int
}

// run sends every conversation of w (each answered "A<turn>") and
// returns what each turn sent.
func run(t *testing.T, w *workloads.Workload) [][]sent {
	t.Helper()
	var all [][]sent
	for i := range w.Summary().Conversations {
		var conv []sent
		for _, r := range turns(w, i, func(k int) string { return "A" + string(rune('0'+k)) }) {
			s := sent{Text: r.Text, MaxTokens: r.MaxTokens, Tokens: r.InputTokens}
			if r.Messages != nil {
				s.Messages = messages(t, r)
			}
			conv = append(conv, s)
		}
		all = append(all, conv)
	}
	return all
}

func user(s string) message      { return message{"user", s} }
func assistant(s string) message { return message{"assistant", s} }
func system(s string) message    { return message{"system", s} }

func est(s string) int { return workloads.EstimateTokens(s) }

func TestShareGPT(t *testing.T) {
	const reply = "one two three four five six seven eight nine ten"
	conv := func(turns ...string) string {
		var ms []string
		for k := 0; k+1 < len(turns); k += 2 {
			ms = append(ms, `{"from": "`+turns[k]+`", "value": "`+turns[k+1]+`"}`)
		}
		return `{"id": "c", "conversations": [` + strings.Join(ms, ", ") + `]}`
	}
	for _, tc := range []struct {
		name    string
		file    string
		cfg     workloads.Config
		want    [][]sent
		skipped int
	}{{
		name: "first turn, its reply's length as max_tokens",
		file: "[" + conv("human", "Hello there", "gpt", reply, "human", "More?", "gpt", "no") + "]",
		cfg:  workloads.Config{Chat: true},
		want: [][]sent{{{Messages: []message{user("Hello there")}, MaxTokens: est(reply), Tokens: est("Hello there")}}},
	}, {
		name: "completions send the text",
		file: "[" + conv("human", "Hello there", "gpt", reply) + "]",
		want: [][]sent{{{Text: "Hello there", MaxTokens: est(reply), Tokens: est("Hello there")}}},
	}, {
		name: "turns send the history with the server's answers",
		file: "[" + conv("system", "Be brief.", "human", "Q1", "gpt", reply, "human", "Q2", "gpt", "r2", "human", "Q3", "gpt", "r3 r3") + "]",
		cfg:  workloads.Config{Chat: true, Turns: 5},
		want: [][]sent{{
			{Messages: []message{system("Be brief."), user("Q1")}, MaxTokens: est(reply), Tokens: est("Be brief.") + est("Q1")},
			{Messages: []message{system("Be brief."), user("Q1"), assistant("A0"), user("Q2")}, MaxTokens: est("r2"), Tokens: est("Be brief.") + est("Q1") + est("A0") + est("Q2")},
			{Messages: []message{system("Be brief."), user("Q1"), assistant("A0"), user("Q2"), assistant("A1"), user("Q3")}, MaxTokens: est("r3 r3"), Tokens: est("Be brief.") + est("Q1") + est("A0") + est("Q2") + est("A1") + est("Q3")},
		}},
	}, {
		name: "cut to turns",
		file: "[" + conv("human", "Q1", "gpt", "r1", "human", "Q2", "gpt", "r2", "human", "Q3", "gpt", "r3") + "]",
		cfg:  workloads.Config{Chat: true, Turns: 2},
		want: [][]sent{{
			{Messages: []message{user("Q1")}, MaxTokens: 1, Tokens: 1},
			{Messages: []message{user("Q1"), assistant("A0"), user("Q2")}, MaxTokens: 1, Tokens: 3},
		}},
	}, {
		name: "human messages in a row are one turn, replies in a row one reply",
		file: "[" + conv("human", "part one", "human", "part two", "gpt", "r1", "gpt", "r2 r2") + "]",
		cfg:  workloads.Config{Chat: true},
		want: [][]sent{{{Messages: []message{user("part one\n\npart two")}, MaxTokens: est("r1") + est("r2 r2"), Tokens: est("part one\n\npart two")}}},
	}, {
		name: "replies before the first question, and a last question unanswered, are dropped",
		file: "[" + conv("gpt", "Hi, how can I help?", "human", "Q1", "gpt", "r1", "human", "Q2") + "]",
		cfg:  workloads.Config{Chat: true, Turns: 5},
		want: [][]sent{{{Messages: []message{user("Q1")}, MaxTokens: 1, Tokens: 1}}},
	}, {
		name: "an empty reply ends the conversation there",
		file: "[" + conv("human", "Q1", "gpt", "r1", "human", "Q2", "gpt", "", "human", "Q3", "gpt", "r3") + "]",
		cfg:  workloads.Config{Chat: true, Turns: 5},
		want: [][]sent{{{Messages: []message{user("Q1")}, MaxTokens: 1, Tokens: 1}}},
	}, {
		name: "other datasets' speakers",
		file: "[" + conv("user", "Q1", "assistant", "r1", "Human", "Q2", "chatgpt", "r2") + "]",
		cfg:  workloads.Config{Chat: true, Turns: 2},
		want: [][]sent{{
			{Messages: []message{user("Q1")}, MaxTokens: 1, Tokens: 1},
			{Messages: []message{user("Q1"), assistant("A0"), user("Q2")}, MaxTokens: 1, Tokens: 3},
		}},
	}, {
		name:    "conversations with nothing to send are skipped and counted",
		file:    "[" + conv("human", "only a question") + ", " + conv() + ", " + conv("gpt", "only a reply") + ", " + conv("human", " ", "gpt", "r") + ", " + conv("human", "Q", "gpt", "r") + "]",
		cfg:     workloads.Config{Chat: true},
		want:    [][]sent{{{Messages: []message{user("Q")}, MaxTokens: 1, Tokens: 1}}},
		skipped: 4,
	}, {
		name: "a byte order mark, other fields, no id",
		file: "\xef\xbb\xbf [{\"conversations\": [{\"from\": \"human\", \"value\": \"Q\", \"markdown\": null}, {\"from\": \"gpt\", \"value\": \"r\"}], \"lang\": \"en\"}]\n",
		want: [][]sent{{{Text: "Q", MaxTokens: 1, Tokens: 1}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dataset = write(t, "data.json", tc.file)
			w := open(t, tc.cfg)
			if got := run(t, w); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sent\n%+v\nwant\n%+v", got, tc.want)
			}
			s := w.Summary()
			if s.Format != workloads.ShareGPT || s.Skipped != tc.skipped || s.Records != len(tc.want)+tc.skipped {
				t.Errorf("summary %+v: want format sharegpt, %d skipped of %d", s, tc.skipped, len(tc.want)+tc.skipped)
			}
		})
	}
}

func TestJSONL(t *testing.T) {
	chatMsgs := `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "two words"}]}]`
	for _, tc := range []struct {
		name string
		file string
		cfg  workloads.Config
		want func(t *testing.T, rs []workloads.Request)
	}{{
		name: "prompts with their output lengths",
		file: `{"prompt": "Hello there", "output_tokens": 64}` + "\n" + `{"prompt": "Second", "id": 7}` + "\n",
		cfg:  workloads.Config{MaxTokens: 99},
		want: func(t *testing.T, rs []workloads.Request) {
			if rs[0].Text != "Hello there" || rs[0].MaxTokens != 64 || rs[0].InputTokens != est("Hello there") {
				t.Errorf("line 1 sends %+v", rs[0])
			}
			if rs[1].Text != "Second" || rs[1].MaxTokens != 99 {
				t.Errorf("line 2 (no output_tokens) sends %+v: want the load's max_tokens 99", rs[1])
			}
		},
	}, {
		name: "input_tokens is the estimate of a prompt",
		file: `{"prompt": "Hello there", "input_tokens": 12, "output_tokens": 3}`,
		cfg:  workloads.Config{Chat: true},
		want: func(t *testing.T, rs []workloads.Request) {
			if rs[0].InputTokens != 12 || rs[0].MaxTokens != 3 || messages(t, rs[0])[0] != user("Hello there") {
				t.Errorf("sends %+v", rs[0])
			}
		},
	}, {
		name: "input_tokens alone makes a prompt of that length",
		file: `{"input_tokens": 40, "output_tokens": 5}` + "\n" + `{"input_tokens": 40, "output_tokens": 5}`,
		want: func(t *testing.T, rs []workloads.Request) {
			for _, r := range rs {
				if len(strings.Fields(r.Text)) != 40 || r.InputTokens != 40 || r.MaxTokens != 5 {
					t.Errorf("sends %d words, estimate %d, max_tokens %d; want 40, 40, 5", len(strings.Fields(r.Text)), r.InputTokens, r.MaxTokens)
				}
			}
			if rs[0].Text == rs[1].Text {
				t.Error("two lines of the same lengths make the same prompt")
			}
		},
	}, {
		name: "messages are sent as given",
		file: `{"messages": ` + chatMsgs + `, "output_tokens": 9}`,
		cfg:  workloads.Config{Chat: true},
		want: func(t *testing.T, rs []workloads.Request) {
			if string(rs[0].Messages) != chatMsgs || rs[0].MaxTokens != 9 || rs[0].InputTokens != est("Be brief.")+est("two words") {
				t.Errorf("sends %s, max_tokens %d, estimate %d", rs[0].Messages, rs[0].MaxTokens, rs[0].InputTokens)
			}
		},
	}, {
		name: "a conversation a line, CRLF, blank lines and a byte order mark",
		file: "\xef\xbb\xbf{\"conversations\": [{\"from\": \"human\", \"value\": \"Q1\"}, {\"from\": \"gpt\", \"value\": \"r1 r1\"}, {\"from\": \"human\", \"value\": \"Q2\"}, {\"from\": \"gpt\", \"value\": \"r2\"}]}\r\n\r\n  \n{\"prompt\": \"P\"}\r\n",
		cfg:  workloads.Config{Chat: true, Turns: 3},
		want: func(t *testing.T, rs []workloads.Request) {
			if len(rs) != 3 {
				t.Fatalf("%d requests, want 2 turns and a prompt", len(rs))
			}
			if m := messages(t, rs[1]); !reflect.DeepEqual(m, []message{user("Q1"), assistant("A0"), user("Q2")}) || rs[0].MaxTokens != 2 || rs[1].MaxTokens != 1 {
				t.Errorf("turn 2 sends %+v, max_tokens %d then %d", m, rs[0].MaxTokens, rs[1].MaxTokens)
			}
			if m := messages(t, rs[2]); !reflect.DeepEqual(m, []message{user("P")}) {
				t.Errorf("line 4 sends %+v", m)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dataset = write(t, "data.jsonl", tc.file)
			w := open(t, tc.cfg)
			if s := w.Summary(); s.Format != workloads.JSONL {
				t.Errorf("format %q, want jsonl", s.Format)
			}
			var rs []workloads.Request
			for i := range w.Summary().Conversations {
				rs = append(rs, turns(w, i, func(k int) string { return "A" + string(rune('0'+k)) })...)
			}
			tc.want(t, rs)
		})
	}
}

func TestBadDatasets(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		cfg        workloads.Config
		want       []string // each error, after the file's path
	}{
		// JSONL, placed at file:line.
		{"not JSON", `{"prompt": "a"}` + "\n" + `{"prompt": "b",}`, workloads.Config{},
			[]string{`:2:16: not JSON (invalid character '}' looking for beginning of object key string); each line is one JSON object, such as {"prompt": "...", "output_tokens": 128}`}},
		{"not an object", "{\"prompt\": \"a\"}\n[1, 2]\n\"text\"", workloads.Config{},
			[]string{`:2: a line must be a JSON object, such as {"prompt": "...", "output_tokens": 128}`, `:3: a line must be a JSON object, such as {"prompt": "...", "output_tokens": 128}`}},
		{"no prompt", `{"text": "hello", "output_tokens": 5}`, workloads.Config{},
			[]string{`:1: a line needs "prompt" (text), "messages" (a chat), "conversations" (ShareGPT turns) or "input_tokens" alone (a generated prompt of that length)`}},
		{"two kinds", `{"prompt": "a", "messages": []}`, workloads.Config{Chat: true},
			[]string{`:1: a line holds one of "prompt", "messages" and "conversations"; this one holds "prompt" and "messages"`}},
		{"misspelt field", `{"prompt": "a", "output_token": 5}`, workloads.Config{},
			[]string{`:1: "output_token" is not a field of a dataset line; did you mean "output_tokens"?`}},
		{"lengths", `{"prompt": "a", "output_tokens": 2.5}` + "\n" + `{"prompt": "a", "output_tokens": "64"}` + "\n" + `{"input_tokens": 0}` + "\n" + `{"input_tokens": 1e9}`, workloads.Config{},
			[]string{`:1: "output_tokens" must be a whole number of tokens, not 2.5`, `:2: "output_tokens" must be a number of tokens, not "64"`, `:3: "input_tokens" is 0; it must be from 1 to 1048576`, `:4: "input_tokens" must be a whole number of tokens, not 1e9`}},
		{"prompt not text", `{"prompt": ["a"]}` + "\n" + `{"prompt": "  "}`, workloads.Config{},
			[]string{`:1: "prompt" must be a string`, `:2: "prompt" is empty`}},
		{"messages on completions", `{"messages": [{"role": "user", "content": "a"}]}`, workloads.Config{},
			[]string{`:1: "messages" need a chat endpoint (/v1/chat/completions); for /v1/completions give a "prompt"`}},
		{"bad messages", `{"messages": {"role": "user"}}` + "\n" + `{"messages": []}` + "\n" + `{"messages": [{"content": "a"}]}` + "\n" + `{"messages": [{"role": "user", "content": 5}]}`, workloads.Config{Chat: true},
			[]string{`:1: "messages" must be a list of {"role": ..., "content": ...} objects`, `:2: "messages" is empty`, `:3: message 1 has no "role" (a string such as "user")`, `:4: message 1: "content" must be a string or a list of parts`}},
		{"lengths on a conversation line", `{"conversations": [], "output_tokens": 5}`, workloads.Config{},
			[]string{`:1: "input_tokens" and "output_tokens" apply to a prompt, messages or generated line; a conversation's turns take their lengths from its messages`}},
		{"a bad conversation line", `{"conversations": [{"from": "robot", "value": "hi"}]}`, workloads.Config{},
			[]string{`:1: message 1: "from" is "robot"; ShareGPT speakers are "human" (or "user"), "gpt" (or "assistant", "chatgpt", "bing", "bard", "model") and "system"`}},
		{"at most ten errors", strings.Repeat("{x\n", 30), workloads.Config{},
			slices.Repeat([]string{`: not JSON (invalid character 'x' looking for beginning of object key string); each line is one JSON object, such as {"prompt": "...", "output_tokens": 128}`}, 10)},

		// ShareGPT, placed at file:line:col and the conversation.
		{"sharegpt syntax", "[\n  {\"conversations\": []},\n  {\"conversations\": [\n    {\"from\": \"human\" \"value\": \"x\"}]}\n]", workloads.Config{},
			[]string{`:4:22: conversation 2: not JSON: invalid character '"' after object key:value pair`}},
		{"sharegpt cut short", "[\n{\"conversations\": []},\n{\"conversations\": [", workloads.Config{},
			[]string{`:3:1: conversation 2: the file ends inside the array: is it cut short?`}},
		{"sharegpt fields", "[\n" + strings.Join([]string{
			`5`,
			`{"id": "no-conv"}`,
			`{"id": 12, "conversation": []}`,
			`{"conversations": {"from": "human"}}`,
			`{"conversations": [{"from": "human"}]}`,
			`{"conversations": [{"value": "x"}]}`,
			`{"conversations": [{"from": 1, "value": "x"}]}`,
			`{"conversations": [{"from": "human", "value": null}]}`,
			`{"conversations": [{"from": "human", "valeu": "x"}]}`,
			`{"conversations": ["hi"]}`,
		}, ",\n") + "\n]", workloads.Config{},
			[]string{
				`:2:1: conversation 1: a conversation must be a JSON object, {"conversations": [{"from": "human", "value": "..."}, ...]}`,
				`:3:1: conversation 2 (id "no-conv"): it has no "conversations" (the list of {"from", "value"} messages)`,
				`:4:1: conversation 3 (id "12"): "conversation" is not a ShareGPT field; did you mean "conversations"?`,
				`:5:1: conversation 4: "conversations" must be a list of {"from": "human" or "gpt", "value": "..."} messages`,
				`:6:1: conversation 5: message 1 has no "value" (its text)`,
				`:7:1: conversation 6: message 1 has no "from" (who speaks: "human" or "gpt")`,
				`:8:1: conversation 7: message 1: "from" must be a string such as "human" or "gpt", not 1`,
				`:9:1: conversation 8: message 1: "value" must be a string, not null`,
				`:10:1: conversation 9: message 1: "valeu" is not a ShareGPT field; did you mean "value"?`,
				`:11:1: conversation 10: message 1 must be an object {"from": ..., "value": ...}`,
			}},
		{"sharegpt speaker", "[\n  {\"id\": \"ok\", \"conversations\": [{\"from\": \"human\", \"value\": \"Q\"}, {\"from\": \"gpt\", \"value\": \"r\"}]},\n  {\"id\": \"x\", \"conversations\": [{\"from\": \"human\", \"value\": \"Q\"}, {\"from\": \"robot\", \"value\": \"r\"}]}\n]", workloads.Config{},
			[]string{`:3:3: conversation 2 (id "x"): message 2: "from" is "robot"; ShareGPT speakers are "human" (or "user"), "gpt" (or "assistant", "chatgpt", "bing", "bard", "model") and "system"`}},
		{"sharegpt trailing data", `[{"conversations": [{"from": "human", "value": "Q"}, {"from": "gpt", "value": "r"}]}]` + "\n\n  {}", workloads.Config{},
			[]string{`:3:3: more after the array's closing ]: a ShareGPT file is one JSON array`}},
		{"sharegpt nothing to send", `[{"conversations": [{"from": "human", "value": "Q"}]}, {"conversations": []}]`, workloads.Config{},
			[]string{`: no conversation has a turn to send (2 read, all skipped: a turn is a human message followed by a reply, both not empty)`}},

		// The file as a whole.
		{"empty", " \n\t\n", workloads.Config{}, []string{`: the dataset is empty`}},
		{"neither format", "id,prompt\n1,hello\n", workloads.Config{},
			[]string{`: neither a ShareGPT file (a JSON array) nor JSON lines (an object a line): it starts with "i"; set dataset_format if it is one of them`}},
		{"sharegpt said, lines found", `{"prompt": "a"}`, workloads.Config{Format: workloads.ShareGPT},
			[]string{`: a ShareGPT dataset is a JSON array of conversations, and this file starts with "{"; for JSON lines set dataset_format = "jsonl" or leave it unset`}},
		{"jsonl said, array found", `[]`, workloads.Config{Format: workloads.JSONL},
			[]string{`: JSON lines hold one JSON object a line, and this file starts with "["; for a ShareGPT array set dataset_format = "sharegpt" or leave it unset`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dataset = write(t, "data", tc.file)
			_, err := workloads.Open(context.Background(), tc.cfg)
			if err == nil {
				t.Fatal("opened")
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimPrefix(line, tc.cfg.Dataset))
			}
			if tc.name == "at most ten errors" {
				for i := range got {
					got[i] = got[i][strings.Index(got[i], ": "):]
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			var de *workloads.Error
			if !errors.As(err, &de) || de.Path != tc.cfg.Dataset {
				t.Errorf("%T is not a *workloads.Error of the file", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.json")
		_, err := workloads.Open(context.Background(), workloads.Config{Dataset: path})
		if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), path+": cannot read the dataset: open ") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a line too long", func(t *testing.T) {
		long := `{"prompt": "` + strings.Repeat("a", workloads.MaxRecordBytes) + `"}`
		path := write(t, "long.jsonl", `{"prompt": "a"}`+"\n"+long+"\n")
		_, err := workloads.Open(context.Background(), workloads.Config{Dataset: path})
		if want := path + ":2: the line is longer than 16 MiB, the limit"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("a conversation too long", func(t *testing.T) {
		long := `{"conversations": [{"from": "human", "value": "` + strings.Repeat("a", workloads.MaxRecordBytes) + `"}]}`
		path := write(t, "long.json", "[\n{\"conversations\": []},\n"+long+"]")
		_, err := workloads.Open(context.Background(), workloads.Config{Dataset: path})
		if want := path + ":3:1: conversation 2: longer than 16 MiB, the limit"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		path := write(t, "data.jsonl", `{"prompt": "a"}`)
		if _, err := workloads.Open(ctx, workloads.Config{Dataset: path}); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  workloads.Config
		want string
	}{
		{workloads.Config{PromptTokens: -1}, "prompt_tokens, shared_prefix_tokens, prefix_groups, prompts, turns and max_tokens must not be negative"},
		{workloads.Config{PromptTokens: workloads.MaxPromptTokens + 1}, "prompt_tokens = 1048577 is more than 1048576, the limit"},
		{workloads.Config{Prompts: 200_000}, "prompts = 200000 is more than 100000, the limit"},
		{workloads.Config{Turns: 1001, Chat: true}, "turns = 1001 is more than 1000, the limit"},
		{workloads.Config{Dataset: "d.json", Format: "csv"}, `dataset_format "csv": must be "sharegpt" or "jsonl", or unset to tell it from the file`},
		{workloads.Config{Format: workloads.JSONL}, "dataset_format needs a dataset"},
		{workloads.Config{Dataset: "d.json", PromptTokens: 64}, "prompt_tokens, shared_prefix_tokens and prefix_groups shape generated prompts; a dataset brings its own (put a shared prefix in the dataset)"},
		{workloads.Config{PrefixGroups: 4}, "prefix_groups needs shared_prefix_tokens, the length of each group's prefix"},
		{workloads.Config{SharedPrefixTokens: 10, PrefixGroups: 4, Prompts: 2}, "prefix_groups = 4 is more than prompts = 2: some prefixes would never be sent"},
		{workloads.Config{SharedPrefixTokens: 1 << 20, PrefixGroups: 9}, "prefix_groups × shared_prefix_tokens = 9437184 tokens is more than 8388608, the limit: use fewer groups or a shorter prefix"},
		{workloads.Config{Turns: 3}, "turns > 1 needs a chat endpoint (/v1/chat/completions): each turn sends the conversation so far as messages"},
		{workloads.Config{Turns: 3, PrefixGroups: 2}, "prefix_groups needs shared_prefix_tokens, the length of each group's prefix\n" +
			"turns > 1 needs a chat endpoint (/v1/chat/completions): each turn sends the conversation so far as messages"},
	} {
		_, err := workloads.Open(context.Background(), tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v\nwant %s", tc.cfg, err, tc.want)
		}
	}
}

func TestSampleWithPrompts(t *testing.T) {
	var b bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&b, `{"prompt": "prompt %d", "output_tokens": %d, "input_tokens": %d}`+"\n", i, 1+i%9, i+1)
	}
	path := write(t, "many.jsonl", b.String())
	sample := func(seed int64) []int {
		w := open(t, workloads.Config{Dataset: path, Prompts: 20, Seed: seed})
		if s := w.Summary(); s.Conversations != 20 || s.Records != 200 {
			t.Fatalf("summary %+v: want 20 of 200", s)
		}
		var lines []int
		for i := range 20 {
			lines = append(lines, first(t, w, i).InputTokens) // input_tokens is the line number
		}
		return lines
	}
	a := sample(1)
	if !slices.IsSorted(a) || a[0] == 1 && a[19] == 20 {
		t.Errorf("sample %v: want 20 lines in file order, not the first 20", a)
	}
	if b := sample(1); !slices.Equal(a, b) {
		t.Errorf("seed 1 samples %v, then %v", a, b)
	}
	if c := sample(2); slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 sample the same lines %v", a)
	}
	w := open(t, workloads.Config{Dataset: path, Prompts: 1000})
	if n := w.Summary().Conversations; n != 200 {
		t.Errorf("prompts = 1000 of 200 lines keeps %d", n)
	}
}

// TestSampleDatasetsAreGenerated keeps examples/datasets what the
// generator makes: go generate ./workloads remakes them.
func TestSampleDatasetsAreGenerated(t *testing.T) {
	files := samples.Files()
	if again := samples.Files(); !reflect.DeepEqual(files, again) {
		t.Fatal("the generator makes different files each time")
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "examples", "datasets", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("examples/datasets/%s is not what the generator makes (%v): run go generate ./workloads", name, err)
		}
	}
}

func TestSampleDatasets(t *testing.T) {
	dir := filepath.Join("..", "examples", "datasets")
	for _, tc := range []struct {
		file                                 string
		cfg                                  workloads.Config
		format                               workloads.Format
		conversations, turns, mostTurnsFound int
	}{
		{"sharegpt.json", workloads.Config{}, workloads.ShareGPT, 24, 1, 1},
		{"sharegpt.json", workloads.Config{Chat: true, Turns: 4}, workloads.ShareGPT, 24, 4, 4},
		{"prompts.jsonl", workloads.Config{}, workloads.JSONL, 24, 1, 1},
		{"conversations.jsonl", workloads.Config{Chat: true, Turns: 6}, workloads.JSONL, 8, 6, 6},
	} {
		tc.cfg.Dataset = filepath.Join(dir, tc.file)
		w := open(t, tc.cfg)
		if s := w.Summary(); s.Format != tc.format || s.Conversations != tc.conversations || s.Turns != tc.mostTurnsFound || s.Skipped != 0 {
			t.Errorf("%s %+v: summary %+v", tc.file, tc.cfg, s)
		}
		for i := range w.Summary().Conversations {
			for _, r := range turns(w, i, func(int) string { return "ok" }) {
				if r.MaxTokens < 1 || r.InputTokens < 1 || r.Text == "" && !json.Valid(r.Messages) {
					t.Errorf("%s conversation %d turn %d: %+v", tc.file, i, r.Turn, r)
				}
			}
		}
	}
}
