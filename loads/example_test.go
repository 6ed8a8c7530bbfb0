package loads_test

import (
	"context"
	"fmt"
	"time"

	"lockstep/loads"
	"lockstep/loads/loadtest"
)

func ExampleExtract() {
	out := []byte("SET: 98039.22 requests per second, p50=0.263 msec\n")
	m, err := loads.Extract(out, []loads.MetricSpec{
		{Name: "set_rps", Regex: `SET: ([0-9.]+) requests per second`},
		{Name: "set_p50_ms", Regex: `p50=([0-9.]+) msec`},
	})
	fmt.Println(m["set_rps"], m["set_p50_ms"], err)
	// Output: 98039.22 0.263 <nil>
}

func ExampleSummarize() {
	s := loads.Summarize([]float64{1210, 1190, 1250})
	fmt.Printf("median %.0f, min %.0f, max %.0f, stddev %.1f\n", s.Median, s.Min, s.Max, s.Stddev)
	// Output: median 1210, min 1190, max 1250, stddev 30.6
}

func ExampleHTTP_Run() {
	srv := loadtest.NewHTTP()
	defer srv.Close()
	res, err := loads.HTTP{URL: srv.URL, Concurrency: 4, Requests: 100}.Run(context.Background(), nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Metrics["requests"], res.Metrics["errors"])
	// Output: 100 0
}

func ExampleOpenAI_Run() {
	srv := loadtest.NewOpenAI(loadtest.OpenAIConfig{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Tokens: 10, Usage: true})
	defer srv.Close()
	res, err := loads.OpenAI{
		URL:    srv.URL + "/v1/chat/completions",
		Stream: true, Concurrency: 2, Requests: 4, MaxTokens: 8,
		Expect: `answer is 4`,
	}.Run(context.Background(), nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Metrics
	fmt.Println(m["completed"], m["output_tokens"], m["answers_matching_share"], res.Notes["token_source"])
	// Output: 4 32 1 usage
}
