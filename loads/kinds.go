package loads

import (
	"context"

	"lockstep/schema"
)

// Kind is one load kind as a plan names it (load "http" { ... }): its
// config, which is its schema (schema.Attrs) and what the run decodes
// into, its metrics and its doc.
type Kind struct {
	Name string
	Doc  string
	// Defaults returns a new config holding the kind's defaults, for
	// schema.DecodeChecked to fill.
	Defaults func() Config
	Metrics  []schema.Metric
}

// Config is a load kind's decoded config: checked (schema.Checker),
// summarized for explain, and run.
type Config interface {
	schema.Checker
	// Summary is what explain says of the load: its model and limits.
	Summary() string
	// Resolved is the config as Run runs it: the defaults that depend on
	// other attributes (a method, a duration) filled in, for the record.
	Resolved() Config
	Run(ctx context.Context, dial Dialer, progress func(Progress)) (Result, error)
}

// Answered is a load that sends to one URL: the runner tells who answered
// it, and whether that must be the attempt's own server.
type Answered interface {
	Answered() (url string, requireOwn bool)
}

var (
	_ Answered = (*HTTP)(nil)
	_ Answered = (*OpenAI)(nil)
	_ Config   = (*HTTP)(nil)
	_ Config   = (*OpenAI)(nil)
)

// Kinds lists the load kinds, in the order docs show them.
func Kinds() []Kind {
	return []Kind{
		{
			Name: "http", Doc: "HTTP/1.1 requests at a concurrency (closed model) or a rate (open model)",
			Defaults: func() Config { return HTTPDefaults() },
			Metrics:  schema.Metrics(HTTPMetrics{}),
		},
		{
			Name: "openai", Doc: "completions against an OpenAI-compatible server, with bench_serving's metrics",
			Defaults: func() Config { return OpenAIDefaults() },
			Metrics: append(schema.Metrics(OpenAIMetrics{}), schema.Metric{
				Name: "max_goodput_rate", Better: schema.Higher,
				Doc: "goodput search (goodput_target): the highest rate probed at which the share of good arrivals held the target; 0 when not even the lower bound did",
			}),
		},
	}
}

// KindNamed returns the load kind named name, or nil.
func KindNamed(name string) *Kind {
	for _, k := range Kinds() {
		if k.Name == name {
			return &k
		}
	}
	return nil
}
