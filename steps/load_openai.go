package steps

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
)

func newOpenAILoad(a map[string]cty.Value, str func(string, string) string, num func(string, int) int, flt func(string) float64, dur func(string) time.Duration, headers map[string]string) (Load, error) {
	stream, err := attrBool(a, "stream", true)
	if err != nil {
		return nil, err
	}
	keep, err := attrBool(a, "keep_requests", false)
	if err != nil {
		return nil, err
	}
	o := loads.OpenAI{
		URL:          str("url", ""),
		Model:        str("model", ""),
		Stream:       stream,
		Concurrency:  num("concurrency", 0),
		Rate:         flt("rate"),
		Requests:     num("requests", 0),
		Duration:     dur("duration"),
		Warmup:       dur("warmup"),
		PromptTokens: num("prompt_tokens", 0),
		PromptsFile:  str("prompts_file", ""),
		MaxTokens:    num("max_tokens", 0),
		Seed:         int64(num("seed", 0)),
		Expect:       str("expect", ""),
		TTFTLimit:    msDuration(flt("ttft_limit_ms")),
		TPOTLimit:    msDuration(flt("tpot_limit_ms")),
		Headers:      headers,
		KeepRequests: keep,
		Timeout:      dur("timeout"),
	}
	if eb, ok := a["extra_body"]; ok && !eb.IsNull() {
		data, err := ToJSON(eb)
		if err == nil {
			err = json.Unmarshal(data, &o.ExtraBody)
		}
		if err != nil {
			return nil, fmt.Errorf("extra_body must be an object: %v", err)
		}
	}
	return o, nil
}
