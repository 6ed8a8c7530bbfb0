// Package loads generates the loads a benchmark step runs and turns what it
// observed into metrics with the unit in their names (requests_per_s,
// latency_p99_ms, ttft_median_ms).
//
// Start reading at HTTP.Run (http.go): a closed model (a fixed number of
// workers, each sending its next request when the last one ends) or an open
// model (a fixed arrival rate, latency measured from the intended send time
// so a stalled server cannot hide behind a stalled client). OpenAI.Run
// (openai.go) loads an OpenAI-compatible server and reports the metrics of
// SGLang's bench_serving and vLLM's benchmark_serving under their
// definitions. Extract and Summarize (extract.go) serve command benchmarks:
// numbers read from a tool's output, and statistics over repeats.
//
// Every load dials through a Dialer, so a load aimed at an SSH target's
// loopback is carried through that target's connection.
package loads
