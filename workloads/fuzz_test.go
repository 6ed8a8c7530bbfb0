package workloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lockstep/workloads"
)

// fuzzOpen opens data as a dataset of format, with up to turns turns
// on a chat endpoint, and checks what any file must give: a
// *workloads.Error of the file at a place in it, or conversations whose
// every turn is a request a server can read.
func fuzzOpen(t *testing.T, data []byte, format workloads.Format, turns uint8) {
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := workloads.Config{Dataset: path, Format: format, Chat: turns > 0, Turns: max(int(turns%8), 1)}
	w, err := workloads.Open(context.Background(), cfg)
	if err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		if len(errs) > 10 {
			t.Errorf("%d errors, more than the 10 reported", len(errs))
		}
		for _, e := range errs {
			var de *workloads.Error
			if !errors.As(e, &de) || de.Path != path {
				t.Fatalf("%v (%T) is not a *workloads.Error of the file", e, e)
			}
			if de.Line < 0 || de.Column < 0 || de.Line > 0 && de.Column == 0 && de.Conversation > 0 {
				t.Errorf("%v: placed at line %d column %d", e, de.Line, de.Column)
			}
		}
		return
	}
	s := w.Summary()
	if s.Conversations < 1 || s.Conversations+s.Skipped > s.Records || s.Turns < 1 || s.Turns > cfg.Turns {
		t.Fatalf("summary %+v of a dataset opened with turns = %d", s, cfg.Turns)
	}
	for i := range s.Conversations {
		c := w.Conversation(i)
		for {
			r, ok := c.Next()
			if !ok {
				break
			}
			if r.MaxTokens < 1 || r.MaxTokens > workloads.MaxPromptTokens || r.InputTokens < 0 {
				t.Errorf("conversation %d turn %d: max_tokens %d, estimate %d", i, r.Turn, r.MaxTokens, r.InputTokens)
			}
			if !cfg.Chat {
				if r.Text == "" || r.Messages != nil {
					t.Errorf("conversation %d: completions request %+v: want text alone", i, r)
				}
				continue
			}
			var msgs []map[string]any
			if err := json.Unmarshal(r.Messages, &msgs); err != nil || len(msgs) == 0 {
				t.Errorf("conversation %d turn %d sends %s: want a list of messages", i, r.Turn, r.Messages)
			}
			for _, m := range msgs {
				if role, _ := m["role"].(string); role == "" {
					t.Errorf("conversation %d turn %d sends %s: a message without a role", i, r.Turn, r.Messages)
				}
			}
			// A conversation's later turns are made here, so they end
			// with the user's turn after the answer given.
			if r.Turn > 0 && (len(msgs) < 3 || msgs[len(msgs)-1]["role"] != "user" || msgs[len(msgs)-2]["content"] != "ok") {
				t.Errorf("conversation %d turn %d sends %s: want the answer, then the user's turn", i, r.Turn, r.Messages)
			}
			c.Answer("ok")
		}
	}
}

func FuzzShareGPT(f *testing.F) {
	sample, err := os.ReadFile(filepath.Join("..", "examples", "datasets", "sharegpt.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample, uint8(4))
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "Q"}, {"from": "gpt", "value": "r"}]}]`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, turns uint8) {
		fuzzOpen(t, data, workloads.ShareGPT, turns)
		fuzzOpen(t, data, "", turns)
	})
}

func FuzzJSONL(f *testing.F) {
	for _, name := range []string{"prompts.jsonl", "conversations.jsonl"} {
		sample, err := os.ReadFile(filepath.Join("..", "examples", "datasets", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sample, uint8(6))
	}
	f.Add([]byte(`{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "output_tokens": 3}`), uint8(1))
	f.Add([]byte(`{"input_tokens": 3, "output_tokens": 2}`+"\n"+`{"prompt": "a"}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, turns uint8) {
		fuzzOpen(t, data, workloads.JSONL, turns)
	})
}
