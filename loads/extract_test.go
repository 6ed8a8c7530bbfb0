package loads_test

import (
	"math"
	"strings"
	"testing"

	"lockstep/loads"
)

// Output of `redis-benchmark -t set,get -n 2000 -q` as redis 7 writes it:
// progress lines ended by \r, then the result of each test.
const redisBenchmarkQ = "\rSET: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r" +
	"                                                                    \r" +
	"SET: 60606.06 requests per second, p50=0.343 msec\n" +
	"\rGET: 86956.52 requests per second, p50=0.287 msec\n\n"

// Output of `redis-benchmark -t set -n 2000 -q --csv`.
const redisBenchmarkCSV = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","66666.67","0.437","0.120","0.359","0.623","4.503","4.631"
`

// Output of `pgbench -T 5 bench` (PostgreSQL 16).
const pgbenchOutput = `pgbench (16.4 (Debian 16.4-1.pgdg120+1))
starting vacuum...end.
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 5 s
number of transactions actually processed: 6172
number of failed transactions: 0 (0.000%)
latency average = 0.810 ms
initial connection time = 2.345 ms
tps = 1234.567890 (without initial connection time)
`

func TestExtractRealOutputs(t *testing.T) {
	tests := []struct {
		name   string
		output string
		specs  []loads.MetricSpec
		want   map[string]float64
	}{
		{"redis-benchmark -q", redisBenchmarkQ, []loads.MetricSpec{
			{Name: "set_rps", Regex: `SET: ([0-9.]+) requests per second`},
			{Name: "get_rps", Regex: `GET: ([0-9.]+) requests per second`},
			{Name: "set_p50_ms", Regex: `SET: [0-9.]+ requests per second, p50=([0-9.]+) msec`},
		}, map[string]float64{"set_rps": 60606.06, "get_rps": 86956.52, "set_p50_ms": 0.343}},
		{"redis-benchmark --csv", redisBenchmarkCSV, []loads.MetricSpec{
			{Name: "p99_ms", Regex: `(?m)^"SET","[^"]*","[^"]*","[^"]*","[^"]*","[^"]*","([^"]*)"`},
		}, map[string]float64{"p99_ms": 4.503}},
		{"pgbench", pgbenchOutput, []loads.MetricSpec{
			{Name: "tps", Regex: `tps = ([0-9.]+)`},
			{Name: "latency_ms", Regex: `latency average = ([0-9.]+) ms`},
			{Name: "transactions", Regex: `actually processed: (\d+)`},
		}, map[string]float64{"tps": 1234.56789, "latency_ms": 0.81, "transactions": 6172}},
		{"whole match without a group", "took 12.5", []loads.MetricSpec{
			{Name: "t", Regex: `[0-9.]+$`},
		}, map[string]float64{"t": 12.5}},
		{"json", `{"results": [{"tps": 10}, {"tps": 2.5e3, "name": "b"}], "meta": {"rps": "17.5"}}`, []loads.MetricSpec{
			{Name: "second_tps", JSON: "results[1].tps"},
			{Name: "rps", JSON: "meta.rps"},
		}, map[string]float64{"second_tps": 2500, "rps": 17.5}},
		{"json after log lines", "starting...\nwarming up\n[{\"x\": {\"y\": [1, 2, 3]}}]\n", []loads.MetricSpec{
			{Name: "y2", JSON: "[0].x.y[2]"},
		}, map[string]float64{"y2": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loads.Extract([]byte(tt.output), tt.specs)
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestExtractFailures(t *testing.T) {
	out := []byte(pgbenchOutput)
	got, err := loads.Extract(out, []loads.MetricSpec{
		{Name: "tps", Regex: `tps = ([0-9.]+)`},
		{Name: "missing", Regex: `qps = ([0-9.]+)`},
		{Name: "word", Regex: `query mode: (\w+)`},
		{Name: "bad", Regex: `(`},
		{Name: "json", JSON: "a.b"},
		{Name: "both", Regex: "x", JSON: "y"},
		{Name: "none"},
	})
	if got["tps"] != 1234.56789 {
		t.Errorf("tps = %v: a failing spec must not hide the others", got["tps"])
	}
	if err == nil {
		t.Fatal("no error for specs that cannot be read")
	}
	for _, want := range []string{
		`metric "missing": regex "qps = ([0-9.]+)" matched nothing`,
		`metric "word": regex "query mode: (\\w+)" matched "simple": not a number`,
		`metric "bad": regex: error parsing regexp`,
		`metric "json": output is not JSON`,
		`metric "both": has both regex and json`,
		`metric "none": needs a regex or a json path`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not say %q", err, want)
		}
	}
}

func TestExtractJSONPathErrors(t *testing.T) {
	doc := []byte(`{"a": {"b": [1, {"c": "x"}]}}`)
	tests := map[string]string{
		"a.x":      `a has no key "x"`,
		"a.b[5]":   "a.b has 2 elements, no [5]",
		"a.b.c":    "a.b is not an object",
		"a[0]":     "a is not an array",
		"a.b[1].c": `not a number: "x"`,
		"a.b[1":    "unclosed [",
		"a.b":      "is not a number",
	}
	for path, want := range tests {
		_, err := loads.Extract(doc, []loads.MetricSpec{{Name: "m", JSON: path}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("path %q: error %v, want it to say %q", path, err, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		values                   []float64
		median, min, max, stddev float64
	}{
		{nil, 0, 0, 0, 0},
		{[]float64{5}, 5, 5, 5, 0},
		{[]float64{3, 1, 2}, 2, 1, 3, 1},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, math.Sqrt(5.0 / 3)},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 4.5, 2, 9, math.Sqrt(32.0 / 7)},
	}
	for _, tt := range tests {
		s := loads.Summarize(tt.values)
		if s.Median != tt.median || s.Min != tt.min || s.Max != tt.max || math.Abs(s.Stddev-tt.stddev) > 1e-12 {
			t.Errorf("Summarize(%v) = %+v, want median %v min %v max %v stddev %v", tt.values, s, tt.median, tt.min, tt.max, tt.stddev)
		}
		if len(s.Values) != len(tt.values) {
			t.Errorf("Summarize(%v).Values = %v", tt.values, s.Values)
		}
		for i := range tt.values {
			if s.Values[i] != tt.values[i] {
				t.Errorf("Summarize(%v).Values = %v: the runs' order must be kept", tt.values, s.Values)
				break
			}
		}
	}
}
