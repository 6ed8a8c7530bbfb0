package loads

import (
	"slices"
	"time"
	"unicode/utf8"
)

// result computes the metrics of the measured phase from its outcomes.
//
// Definitions follow SGLang's bench_serving (calculate_metrics) and, for
// goodput, vLLM's benchmark_serving; over successful requests only:
//   - duration: from the first request sent to the last one ended.
//   - requests_per_s = completed / duration; {input,output,total}_tokens_per_s
//     likewise over token totals.
//   - ttft: send to the first chunk with text (without a stream: the
//     whole response, as bench_serving does).
//   - tpot = (e2e - ttft) / (output_tokens - 1), for output_tokens > 1.
//   - itl: every interval between consecutive chunks with text.
//   - e2e_latency: send to data: [DONE] (or the end of the response).
//   - achieved_concurrency = sum of e2e latencies / duration.
//   - goodput_requests_per_s = requests with ttft <= TTFTLimit and tpot <=
//     TPOTLimit (0 when output_tokens <= 1, as vLLM) / duration;
//     goodput_share = those / all requests sent (failed ones included).
func (r *openaiRun) result(outs []outcome) Result {
	dur := r.phaseEnd.Sub(r.phaseStart)
	slices.SortFunc(outs, func(a, b outcome) int { return a.start.Compare(b.start) })
	var ttfts, tpots, itls, e2es []float64
	var completed, errs, good, matching int
	var inTokens, outTokens int
	sources := map[string]int{}
	var samples []string
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	resent := 0
	for _, o := range outs {
		resent += o.resent
		if o.err != nil {
			errs++
			if len(samples) < maxSamples {
				samples = append(samples, "error: "+o.err.Error())
			}
			continue
		}
		completed++
		inTokens += o.inTokens
		outTokens += o.outTokens
		sources[o.tokenSource]++
		ttfts = append(ttfts, ms(o.ttft))
		e2es = append(e2es, ms(o.e2e))
		var tpot time.Duration
		if o.outTokens > 1 {
			tpot = (o.e2e - o.ttft) / time.Duration(o.outTokens-1)
			tpots = append(tpots, ms(tpot))
		}
		for _, d := range o.itl {
			itls = append(itls, ms(d))
		}
		if (r.o.TTFTLimit == 0 || o.ttft <= r.o.TTFTLimit) && (r.o.TPOTLimit == 0 || tpot <= r.o.TPOTLimit) {
			good++
		}
		if r.expect != nil {
			if r.expect.MatchString(o.answer) {
				matching++
			} else if len(samples) < maxSamples {
				samples = append(samples, truncate(o.answer, 300))
			}
		}
	}

	secs := dur.Seconds()
	per := func(n float64) float64 {
		if secs <= 0 {
			return 0
		}
		return n / secs
	}
	m := map[string]float64{
		"requests":               float64(len(outs)),
		"completed":              float64(completed),
		"errors":                 float64(errs),
		"resent":                 float64(resent),
		"duration_s":             secs,
		"input_tokens":           float64(inTokens),
		"output_tokens":          float64(outTokens),
		"requests_per_s":         per(float64(completed)),
		"input_tokens_per_s":     per(float64(inTokens)),
		"output_tokens_per_s":    per(float64(outTokens)),
		"total_tokens_per_s":     per(float64(inTokens + outTokens)),
		"achieved_concurrency":   per(sum(e2es) / 1000),
		"goodput_requests_per_s": per(float64(good)),
		"goodput_share":          0,
	}
	if len(outs) > 0 {
		m["goodput_share"] = float64(good) / float64(len(outs))
	}
	if r.expect != nil && completed > 0 {
		m["answers_matching_share"] = float64(matching) / float64(completed)
	}
	summary(m, "ttft", ttfts)
	summary(m, "e2e_latency", e2es)
	if r.o.Stream { // without a stream there is one arrival: no TPOT, no ITL
		summary(m, "tpot", tpots)
		summary(m, "itl", itls)
	}

	notes := map[string]string{
		"model":    r.o.Model,
		"endpoint": "completions",
		"arrivals": "closed",
		"prompts":  "synthetic",
	}
	if r.chat {
		notes["endpoint"] = "chat"
	}
	if r.o.Rate > 0 {
		notes["arrivals"] = "poisson"
	}
	if r.o.PromptsFile != "" {
		notes["prompts"] = r.o.PromptsFile
	}
	switch len(sources) {
	case 0:
	case 1:
		for s := range sources {
			notes["token_source"] = s
		}
	default:
		notes["token_source"] = "mixed"
	}

	res := Result{Metrics: m, Notes: notes, Samples: samples}
	if r.o.KeepRequests {
		res.Requests = make([]RequestRecord, 0, len(outs))
		for _, o := range outs {
			rec := RequestRecord{Status: o.status, TTFT: o.ttft, E2E: o.e2e, InputTokens: o.inTokens, OutputTokens: o.outTokens}
			if !o.start.IsZero() {
				rec.Start = o.start.Sub(r.phaseStart)
			}
			if o.err != nil {
				rec.Error = o.err.Error()
			}
			res.Requests = append(res.Requests, rec)
		}
	}
	return res
}

// summary adds NAME_{mean,median,p99}_ms of values (in ms), if any.
func summary(m map[string]float64, name string, values []float64) {
	if len(values) == 0 {
		return
	}
	sorted := slices.Sorted(slices.Values(values))
	m[name+"_mean_ms"] = sum(values) / float64(len(values))
	m[name+"_median_ms"] = percentile(sorted, 50)
	m[name+"_p99_ms"] = percentile(sorted, 99)
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
