// Package loads generates the loads a benchmark step runs and turns what it
// observed into metrics with the unit in their names (requests_per_s,
// latency_p99_ms, ttft_median_ms).
//
// Start reading at Kinds (kinds.go): the load kinds, one file each
// (http.go, openai.go), each a config struct whose tags are its schema
// (schema.Attrs), its defaults function, its Check, its explain summary
// and its metrics struct (schema.Metrics). plans derives the language
// from them; the runner decodes a load block into the kind's defaults
// with schema.DecodeChecked, as validate does, and runs it.
//
// Every kind runs on one engine (engine.go): admission, warm-up, the
// closed model (a fixed number of workers, each sending its next request
// when the last one ends) and the open model (arrivals when a Pacer says,
// pacer.go, timed from the intended send so a stalled server cannot hide
// behind a stalled client), dropped and late counts, cancellation. A
// kind is its hitter: the HTTP/1.1 client (http1.go) or an OpenAI
// request (openai.go), recording into HDR histograms. Extract and
// Summarize (extract.go) serve command benchmarks: numbers read from a
// tool's output by regex or JSONPath (jsonpath.go, the grammar validate
// checks too), and statistics over repeats.
//
// Every load dials through a Dialer, so a load aimed at an SSH target's
// loopback is carried through that target's connection.
package loads
