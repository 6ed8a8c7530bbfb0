package loads

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// oracleChunk is how the load read a chunk before scanChunk: the
// members that count, decoded by encoding/json. scanChunk must read every
// document as it does.
type oracleChunk struct {
	Choices []struct {
		Text    string `json:"text"`
		Message *struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"message"`
		Delta *struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// read is what encoding/json makes of data, as scanChunk reports it.
func (c *oracleChunk) read(data []byte) (f chunkFields, answer, reasoning string, err error) {
	if err := json.Unmarshal(data, c); err != nil {
		return f, "", "", err
	}
	for _, ch := range c.Choices {
		answer += ch.Text
		if ch.Message != nil {
			answer += ch.Message.Content
			reasoning += ch.Message.ReasoningContent
		}
		if ch.Delta != nil {
			answer += ch.Delta.Content
			reasoning += ch.Delta.ReasoningContent
		}
	}
	f.text = answer != "" || reasoning != ""
	if c.Usage != nil {
		f.usage, f.prompt, f.completion = true, c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		f.errValue = c.Error
	}
	return f, answer, reasoning, nil
}

// sameAsEncodingJSON fails t where scanChunk reads data otherwise than
// encoding/json does: an error for an error, and the same fields and text.
func sameAsEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	var o oracleChunk
	want, wantA, wantR, wantErr := o.read(data)
	var a, r strings.Builder
	var got chunkFields
	err := scanChunk(data, &a, &r, &got)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: scanChunk error %v, encoding/json error %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.text != want.text || got.usage != want.usage || got.prompt != want.prompt || got.completion != want.completion ||
		!bytes.Equal(got.errValue, want.errValue) || a.String() != wantA || r.String() != wantR {
		t.Fatalf("%q:\nscanChunk     %+v %q %q\nencoding/json %+v %q %q", data, got, a.String(), r.String(), want, wantA, wantR)
	}
	// Without builders, the same fields.
	var bare chunkFields
	if err := scanChunk(data, nil, nil, &bare); err != nil || bare.text != got.text || bare.usage != got.usage {
		t.Fatalf("%q: without builders %+v, %v; with %+v", data, bare, err, got)
	}
}

var chunkCases = []string{
	// What servers send: OpenAI, vLLM, SGLang, llama.cpp, Ollama.
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"demo","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"demo","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
	`{"id":"x","choices":[],"usage":{"prompt_tokens":16,"completion_tokens":64,"total_tokens":80}}`,
	`{"id":"x","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}`,
	`{"choices":[{"message":{"role":"assistant","content":"Hello there","reasoning_content":"hmm"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	`{"choices":[{"text":"a"},{"text":"b","delta":{"content":"c"}},null]}`,
	`{"error":{"message":"model overloaded","type":"server_error","code":503}}`,
	`{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
	`{"error":"boom"}`, `{"error":false}`, `{"error":{}}`, `{"error": [1, 2] }`,
	// Escapes, Unicode, invalid UTF-8.
	`{"choices":[{"delta":{"content":"line\nnext \"q\" \\ \/ \b\f\r\t \u00e9 \u20AC \ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"content":"lone \ud800 and \udc00x and \ud800\u0041"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"bad \xff\xfe utf8 \xe2\x82 ok é\"}}]}",
	`{"choices":[{"delta":{"content":"\u0000"}}]}`,
	// Names in another case, or escaped, as encoding/json matches them.
	`{"Choices":[{"DELTA":{"Content":"x"}}],"USAGE":{"Prompt_Tokens":3}}`,
	`{"\u0063hoices":[{"delta":{"\u0063ontent":"x"}}]}`,
	"{\"choices\":[{\"delta\":{\"reasoning_content\":\"x\"}}],\"u\u017fage\":{\"prompt_tokens\":1}}",
	"{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":{\"prompt_to\u212aens\":9}}",
	// Nulls for everything.
	`null`, ` null `, `{}`, `{"choices":null,"usage":null,"error":null}`,
	`{"choices":[{"text":null,"message":null,"delta":null}]}`,
	`{"usage":{"prompt_tokens":null,"completion_tokens":-0}}`,
	// Whitespace everywhere.
	" \t\r\n{ \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] , \"usage\" : { \"prompt_tokens\" : 1 } } \n",
	// Skipped members of every kind.
	`{"a":[1,-2.5e+3,0,-0.0,1E9,true,false,null,"s",{"b":{"c":[[]]}}],"choices":[{"x":{"y":[{}]},"delta":{"z":[1],"content":"t"}}]}`,
	// Type errors.
	`[]`, `"s"`, `5`, `true`,
	`{"choices":{}}`, `{"choices":[1]}`, `{"choices":["a"]}`, `{"choices":[{"text":5}]}`,
	`{"choices":[{"delta":"x"}]}`, `{"choices":[{"delta":{"content":["x"]}}]}`, `{"choices":[{"message":[]}]}`,
	`{"usage":5}`, `{"usage":{"prompt_tokens":1.5}}`, `{"usage":{"prompt_tokens":1e3}}`, `{"usage":{"prompt_tokens":"5"}}`,
	`{"usage":{"completion_tokens":99999999999999999999}}`, `{"usage":{"completion_tokens":{}}}`,
	// Syntax errors.
	``, ` `, `{`, `{"choices":[`, `{"choices":[{"delta":{"content":"x"}}]`, `{"a":1,}`, `{"a":1 "b":2}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{,"a":1}`, `{"a"}`, `{"a":}`, `{a:1}`, `{'a':1}`, `{"a":01}`, `{"a":1.}`,
	`{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":nullx}`, `{"a":"\x"}`,
	`{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}", `{"a":"open}`, `{} {}`, `{}x`, `nullnull`,
	`{"choices":[{"delta":{"content":"x"}}]}]`, `{"a":NaN}`, `{"a":Infinity}`, "\ufeff{}",
	`{"choices":[{"delta":{"content":"x"` + "\x00" + `"}}]}`,
}

func TestScanChunkReadsAsEncodingJSON(t *testing.T) {
	for _, c := range chunkCases {
		sameAsEncodingJSON(t, []byte(c))
	}
	// encoding/json's nesting limit, 10,000 arrays and objects.
	for _, depth := range []int{9999, 10000, 10001} {
		doc := `{"choices":[{"delta":{"content":"x","deep":` + strings.Repeat("[", depth-4) + strings.Repeat("]", depth-4) + `}}]}`
		sameAsEncodingJSON(t, []byte(doc))
	}
}

// FuzzScanChunk checks scanChunk against encoding/json on any document
// whose objects do not give a name twice (there the two differ, see
// scanChunk).
func FuzzScanChunk(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if repeatsAName(data) {
			t.Skip("a name given twice")
		}
		sameAsEncodingJSON(t, data)
	})
}

// repeatsAName reports whether an object in data (valid JSON or not)
// gives a name twice, matched as encoding/json matches names.
func repeatsAName(data []byte) bool {
	d := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next string token is a name
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.key
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: v == '{', names: map[string]bool{}, key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if isKey {
				name := strings.ToLower(string(bytes.ToLower([]byte(v))))
				name = strings.Map(func(r rune) rune {
					switch r {
					case 'ſ':
						return 's'
					case 'K':
						return 'k'
					}
					return r
				}, name)
				if top.names[name] {
					return true
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}
