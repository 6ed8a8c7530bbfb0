package workloads_test

import (
	"context"
	"fmt"

	"lockstep/workloads"
)

// A load sends each turn of a conversation in order, and gives each
// answer back: the next turn sends it as the assistant's message.
func ExampleConversation() {
	w, err := workloads.Open(context.Background(), workloads.Config{Chat: true, Turns: 2, PromptTokens: 3, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := w.Conversation(0)
	for {
		r, ok := c.Next()
		if !ok {
			break
		}
		fmt.Printf("turn %d of %d, max_tokens %d, ~%d tokens: %s\n", r.Turn+1, r.Turns, r.MaxTokens, r.InputTokens, r.Messages)
		c.Answer("Sure.") // what the server answered
	}
	// Output:
	// turn 1 of 2, max_tokens 128, ~3 tokens: [{"role":"user","content":"plain an step"}]
	// turn 2 of 2, max_tokens 128, ~8 tokens: [{"role":"user","content":"plain an step"},{"role":"assistant","content":"Sure."},{"role":"user","content":"for hour rain"}]
}
