package loads

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"lockstep/internal/cpubench"
)

// BenchmarkReadStream reads one streamed chat answer of 64 tokens as the
// servers send it (a role delta, 64 content deltas, a finish, usage,
// [DONE]): the client's CPU per request, beside the network's. Besides
// the wall time it reports cpu-ns/op, the process's CPU time, which a
// shared machine disturbs far less.
func BenchmarkReadStream(b *testing.B) {
	var sse bytes.Buffer
	id := `"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"demo"`
	fmt.Fprintf(&sse, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n", id)
	for i := range 64 {
		fmt.Fprintf(&sse, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"finish_reason\":null}]}\n\n", id, i)
	}
	fmt.Fprintf(&sse, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n", id)
	fmt.Fprintf(&sse, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":64,\"total_tokens\":80}}\n\n", id)
	sse.WriteString("data: [DONE]\n\n")
	r := &openaiRun{}
	wk := &openaiWorker{}
	b.ReportAllocs()
	b.SetBytes(int64(sse.Len()))
	cpu := cpubench.Now()
	for range b.N {
		var out outcome
		var answer, reasoning strings.Builder
		wk.itl = wk.itl[:0]
		if err := r.readStream(bytes.NewReader(sse.Bytes()), time.Now(), wk, &out, &answer, &reasoning); err != nil || out.outTokens != 64 {
			b.Fatal(err, out.outTokens)
		}
	}
	cpu.ReportPerOp(b)
}
