package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
)

type config struct {
	URL     string            `hcl:"url,required" doc:"where"`
	Method  string            `hcl:"method" doc:"verb"`
	Workers int               `hcl:"workers" doc:"how many"`
	Rate    float64           `hcl:"rate" doc:"per second"`
	Stream  bool              `hcl:"stream" doc:"stream it"`
	Timeout time.Duration     `hcl:"timeout" doc:"how long"`
	Headers map[string]string `hcl:"headers" doc:"headers"`
	Workdir string            `hcl:"workdir" doc:"where it runs" default:"the target's workdir"`
	Body    cty.Value         `hcl:"json" doc:"any value"`
	Repeat  int               `hcl:"repeat,const" doc:"times"`
	hidden  int
}

func defaults() config {
	return config{Method: "GET", Workers: 1, Stream: true, Timeout: 30 * time.Second, Repeat: 1}
}

func TestAttrsShowTheStructsDefaults(t *testing.T) {
	got := map[string]schema.Attr{}
	for _, a := range schema.Attrs(defaults()) {
		got[a.Name] = a
	}
	want := map[string]string{"url": "", "method": "GET", "workers": "1", "rate": "", "stream": "true",
		"timeout": "30s", "headers": "{}", "workdir": "the target's workdir", "json": "", "repeat": "1"}
	if len(got) != len(want) {
		t.Fatalf("got %d attributes, want %d: %v", len(got), len(want), got)
	}
	for name, def := range want {
		if got[name].Default != def {
			t.Errorf("%s: default %q, want %q", name, got[name].Default, def)
		}
	}
	if !got["url"].Required || got["method"].Required || !got["repeat"].Const {
		t.Errorf("required/const options lost: %+v", got)
	}
	if got["timeout"].Type != cty.String || got["workers"].Type != cty.Number || got["json"].Type != cty.DynamicPseudoType ||
		!got["headers"].Type.Equals(cty.Map(cty.String)) {
		t.Errorf("types: %+v", got)
	}
}

func TestDecode(t *testing.T) {
	cfg := defaults()
	err := schema.Decode(map[string]cty.Value{
		"url":     cty.StringVal("http://127.0.0.1/"),
		"workers": cty.StringVal("8"), // HCL converts "8" to 8
		"timeout": cty.StringVal("2m"),
		"headers": cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		"stream":  cty.NullVal(cty.Bool),           // null keeps the default
		"rate":    cty.UnknownVal(cty.Number),      // unknown is skipped
		"method":  cty.StringVal("POST").Mark("s"), // marks are dropped
	}, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.URL != "http://127.0.0.1/" || cfg.Workers != 8 || cfg.Timeout != 2*time.Minute || cfg.Headers["a"] != "b" ||
		!cfg.Stream || cfg.Rate != 0 || cfg.Method != "POST" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestDecodeTellsEachBadAttribute(t *testing.T) {
	for _, c := range []struct {
		attr string
		v    cty.Value
		want string
	}{
		{"timeout", cty.NumberIntVal(5), `timeout must be a duration such as "30s" (a string with a unit), not 5`},
		{"timeout", cty.StringVal("5"), `timeout must be a duration such as "30s", "2m" or "250ms", not "5"`},
		{"timeout", cty.StringVal("-1s"), `timeout must not be negative`},
		{"workers", cty.NumberFloatVal(1.5), `workers must be a whole number, not 1.5`},
		{"workers", cty.StringVal("many"), `workers must be a whole number, not "many"`},
		{"stream", cty.StringVal("yes"), `stream must be true or false`},
		{"headers", cty.StringVal("a"), `headers must be a map of strings`},
		{"method", cty.ListValEmpty(cty.String), `method must be a string, not list of string`},
	} {
		cfg := defaults()
		err := schema.Decode(map[string]cty.Value{c.attr: c.v}, &cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %#v: error %v, want %q", c.attr, c.v, err, c.want)
		}
	}
	cfg := defaults()
	err := schema.Decode(map[string]cty.Value{"timeout": cty.True, "workers": cty.True}, &cfg)
	if err == nil || !strings.Contains(err.Error(), "workers") || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("every bad attribute is told: %v", err)
	}
}

func TestShownIsWhatAttrsShowForTheDefaults(t *testing.T) {
	cfg := defaults()
	shown := schema.Shown(&cfg)
	for _, a := range schema.Attrs(defaults()) {
		if a.Name == "workdir" { // a default the struct cannot hold
			continue
		}
		if shown[a.Name] != a.Default {
			t.Errorf("%s: shown %q, docs say %q", a.Name, shown[a.Name], a.Default)
		}
	}
	cfg.Body = cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(1)})
	if got := schema.Shown(&cfg)["json"]; got != `{"n":1}` {
		t.Errorf("json shown as %q", got)
	}
}
