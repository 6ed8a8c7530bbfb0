package main

import (
	"strings"
	"testing"
)

func TestAnswer(t *testing.T) {
	n := func(i int) *int { return &i }
	tests := []struct {
		name     string
		cfg      config
		question string
		req      request
		want     string
		finish   string
	}{
		{"2+2", config{}, "What is 2+2?", request{}, "2+2 = 4.", "stop"},
		{"max_tokens above the answer", config{}, "What is 2+2?", request{MaxTokens: n(16)}, "2+2 = 4.", "stop"},
		{"max_tokens cuts", config{}, "What is 2+2?", request{MaxTokens: n(1)}, "2+2", "length"},
		{"max_completion_tokens wins", config{}, "What is 2+2?", request{MaxTokens: n(16), MaxCompletion: n(2)}, "2+2 =", "length"},
		{"ignore_eos runs to max_tokens", config{}, "What is 2+2?", request{MaxTokens: n(7), IgnoreEOS: true}, "2+2 = 4. 2+2 = 4. 2+2", "length"},
		{"ignore_eos without max_tokens", config{}, "What is 2+2?", request{IgnoreEOS: true}, "2+2 = 4.", "stop"},
		{"nan", config{nan: true}, "What is 2+2?", request{}, "NaN NaN NaN", "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{cfg: tt.cfg}
			tokens, finish := s.answer(tt.question, tt.req)
			if got := strings.Join(tokens, ""); got != tt.want || finish != tt.finish {
				t.Errorf("answer = %q (%s), want %q (%s)", got, finish, tt.want, tt.finish)
			}
		})
	}
}

func TestAnswerOtherQuestions(t *testing.T) {
	s := &server{}
	seen := map[string]bool{}
	for _, q := range []string{"Name a city.", "Tell me a fact.", "Hello", "Why?", "What is 3+3?", ""} {
		tokens, _ := s.answer(q, request{})
		a := strings.Join(tokens, "")
		if a == "" || strings.Contains(a, "4") {
			t.Errorf("answer to %q = %q, want a sentence that is not the 2+2 answer", q, a)
		}
		again, _ := s.answer(q, request{})
		if strings.Join(again, "") != a {
			t.Errorf("answer to %q changed between calls", q)
		}
		seen[a] = true
	}
	if len(seen) < 2 {
		t.Errorf("every question got the same answer %v; the answer should follow the question", seen)
	}
}
