package loads

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// promptWords are common English words that common tokenizers (BPE of
// GPT, Llama, Qwen, GLM) each encode as one token when preceded by a
// space, so a synthetic prompt of n words is about n tokens.
var promptWords = strings.Fields(`the of and to in is it you that he was for on are with as
his they be at one have this from or had by word but what some we can out other were all
there when up use your how said an each she which do their time if will way about many then
them write would like so these her long make thing see him two has look more day could go
come did number sound no most people my over know water than call first who may down side
been now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form great think say
help low line before turn cause same mean differ move right boy old too does tell set three
want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try
us again animal point mother world near build self earth father head stand own page should
country found answer school grow study still learn plant cover food sun four thought let
keep eye never last door between city tree cross since hard start might story saw far sea
draw left late run while press close night real life few stop open seem together next white
children begin got walk example ease paper often always music those both mark book letter
until mile river car feet care second group carry took rain eat room friend began idea fish
mountain north once base hear horse cut sure watch color face wood main enough plain girl
usual young ready above ever red list though feel talk bird soon body dog family direct pose
leave song measure state product black short numeral class wind question happen complete
ship area half rock order fire south problem piece told knew pass farm top whole king size
heard best hour better true during hundred am remember step early hold west ground interest
reach fast five sing listen six table travel less morning ten simple several vowel toward war
lay against pattern slow center love person money serve appear road map science rule govern
pull cold notice voice fall power town fine certain fly unit lead cry dark machine note wait
plan figure star box noun field rest correct able pound done beauty drive stood contain front
teach week final gave green oh quick develop sleep warm free minute strong special mind behind
clear tail produce fact street inch lot nothing course stay wheel full force blue object decide
surface deep moon island foot yet busy test record boat common gold possible plane age dry
wonder laugh thousand ago ran check game shape yes hot miss brought heat snow bed bring sit
perhaps fill east weight language among`)

// prompt is one request's input: text for /v1/completions and a plain
// chat turn, or messages as a file gave them. tokens is an estimate used
// when the server reports no usage.
type prompt struct {
	text     string
	messages json.RawMessage
	tokens   int
}

// prompts yields the prompt of request i.
type prompts interface {
	at(i int) prompt
}

// synthetic prompts are n words drawn from promptWords by a generator
// seeded with (seed, i): the same Seed gives the same prompts, and no two
// requests share a prefix for a server's cache to reuse.
type synthetic struct {
	words int
	seed  int64
}

func (s synthetic) at(i int) prompt {
	r := rand.New(rand.NewPCG(uint64(s.seed), uint64(i)))
	var b strings.Builder
	for k := range s.words {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[r.IntN(len(promptWords))])
	}
	return prompt{text: b.String(), tokens: s.words}
}

// filePrompts are the lines of a JSONL file, each {"prompt": "..."} or
// {"messages": [...]}, used in turn and again from the start.
type filePrompts []prompt

func (f filePrompts) at(i int) prompt { return f[i%len(f)] }

func readPrompts(path string, chat bool) (filePrompts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read prompts: %w", err)
	}
	var out filePrompts
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Prompt   *string         `json:"prompt"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch {
		case rec.Prompt != nil:
			out = append(out, prompt{text: *rec.Prompt, tokens: len(strings.Fields(*rec.Prompt))})
		case len(rec.Messages) > 0:
			if !chat {
				return nil, fmt.Errorf("%s:%d: messages need a chat endpoint (/v1/chat/completions)", path, n)
			}
			var msgs []struct {
				Content any `json:"content"`
			}
			if err := json.Unmarshal(rec.Messages, &msgs); err != nil {
				return nil, fmt.Errorf("%s:%d: messages: %w", path, n, err)
			}
			p := prompt{messages: append(json.RawMessage(nil), rec.Messages...)}
			for _, m := range msgs {
				if s, ok := m.Content.(string); ok {
					p.tokens += len(strings.Fields(s))
				}
			}
			out = append(out, p)
		default:
			return nil, fmt.Errorf(`%s:%d: a line needs "prompt" or "messages"`, path, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read prompts %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no prompts", path)
	}
	return out, nil
}
