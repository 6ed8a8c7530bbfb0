package main

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lockstep/loads/loadtest"
	"lockstep/plans"
	"lockstep/runner/records"
	"lockstep/schema"
)

// loadSamples is, for each load attribute, a value other than its default
// that a load runs with here, as written and as the record shows it. An
// attribute added to a load kind without a sample fails the test.
func loadSamples(httpURL, openaiURL, prompts string) map[string]probeSample {
	return map[string]probeSample{
		"http.url":                    {strconv.Quote(httpURL), httpURL},
		"http.method":                 {`"PUT"`, "PUT"},
		"http.headers":                {`{ X-Load = "yes" }`, `{ "X-Load" = "yes" }`},
		"http.body":                   {`"hello"`, "hello"},
		"http.concurrency":            {`2`, "2"},
		"http.rate":                   {`200`, "200"},
		"http.duration":               {`"300ms"`, "300ms"},
		"http.requests":               {`3`, "3"},
		"http.warmup":                 {`"50ms"`, "50ms"},
		"http.ramp":                   {`"50ms"`, "50ms"},
		"http.timeout":                {`"5s"`, "5s"},
		"http.require_own":            {`false`, "false"},
		"openai.url":                  {strconv.Quote(openaiURL), openaiURL},
		"openai.model":                {`"demo"`, "demo"},
		"openai.stream":               {`false`, "false"},
		"openai.concurrency":          {`2`, "2"},
		"openai.rate":                 {`200`, "200"},
		"openai.requests":             {`3`, "3"},
		"openai.duration":             {`"300ms"`, "300ms"},
		"openai.warmup":               {`"50ms"`, "50ms"},
		"openai.ramp":                 {`"50ms"`, "50ms"},
		"openai.prompt_tokens":        {`8`, "8"},
		"openai.dataset":              {strconv.Quote(prompts), prompts},
		"openai.dataset_format":       {`"jsonl"`, "jsonl"},
		"openai.shared_prefix_tokens": {`4`, "4"},
		"openai.prefix_groups":        {`2`, "2"},
		"openai.prompts":              {`2`, "2"},
		"openai.turns":                {`2`, "2"},
		"openai.max_tokens":           {`4`, "4"},
		"openai.seed":                 {`3`, "3"},
		"openai.expect":               {`"answer"`, "answer"},
		"openai.ttft_limit_ms":        {`500`, "500"},
		"openai.tpot_limit_ms":        {`100`, "100"},
		"openai.extra_body":           {`{ temperature = 0 }`, `{"temperature":0}`},
		"openai.headers":              {`{ X-Load = "yes" }`, `{ "X-Load" = "yes" }`},
		"openai.keep_requests":        {`true`, "true"},
		"openai.timeout":              {`"5s"`, "5s"},
		"openai.goodput_target":       {`0.5`, "0.5"},
		"openai.search_probes":        {`3`, "3"},
		"openai.search_tolerance":     {`0.2`, "0.2"},
		"openai.require_own":          {`false`, "false"},
	}
}

// Every attribute of every load kind, taken from plans.Language() (what
// validate checks, explain and the docs show), goes through validate,
// explain and a run of the real command, once left to its default and
// once set: the config each load ran with, as the run's record keeps it,
// holds the default the language shows, or the value set. Every step
// sets requests (but the one that tests it) so that no step runs the
// default 10 s.
func TestLoadAttributesRunAsExplained(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(records.EnvRoot, "")
	prompts := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(prompts, []byte(`{"prompt": "what is 2+2?"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer hsrv.Close()
	osrv := loadtest.NewOpenAI(loadtest.OpenAIConfig{Model: "demo", Tokens: 3, Usage: true})
	defer osrv.Close()
	samples := loadSamples(hsrv.URL+"/", osrv.URL+"/v1/completions", prompts)
	sample := func(kind, attr string) probeSample {
		s, ok := samples[kind+"."+attr]
		if !ok {
			t.Fatalf("load %q attribute %q has no sample value in loadSamples: add one it runs with", kind, attr)
		}
		return s
	}

	type load struct {
		kind, name string
		attrs      map[string]string
	}
	var ls []load
	lang := plans.Language()
	needs := func(kind, except string) map[string]string {
		m := map[string]string{"url": sample(kind, "url").hcl}
		if except != "requests" {
			m["requests"] = "2"
		}
		return m
	}
	// Attributes that take another with them: a format needs a dataset,
	// groups a prefix, turns a chat endpoint.
	companions := map[string]map[string]string{
		"openai.dataset_format": {"dataset": strconv.Quote(prompts)},
		"openai.prefix_groups":  {"shared_prefix_tokens": "4"},
		"openai.turns":          {"url": strconv.Quote(osrv.URL + "/v1/chat/completions")},
		// A goodput search needs its bounds and a limit; what bounds it
		// is a search's whatever it is set to.
		"openai.goodput_target":   {"rate": "[100, 400]", "ttft_limit_ms": "60000"},
		"openai.search_probes":    {"rate": "[100, 400]", "ttft_limit_ms": "60000", "goodput_target": "0.5"},
		"openai.search_tolerance": {"rate": "[100, 400]", "ttft_limit_ms": "60000", "goodput_target": "0.5"},
	}
	for _, k := range lang.Loads {
		ls = append(ls, load{k.Name, k.Name + "_default", needs(k.Name, "")})
		for _, a := range k.Attrs {
			m := needs(k.Name, a.Name)
			maps.Copy(m, companions[k.Name+"."+a.Name])
			m[a.Name] = sample(k.Name, a.Name).hcl
			ls = append(ls, load{k.Name, k.Name + "_" + a.Name, m})
		}
	}
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "step \"benchmark\" %q {\n  load %q {\n", l.name, l.kind)
		writeAttrs(&b, "    ", l.attrs)
		b.WriteString("  }\n}\n\n")
	}
	plan := filepath.Join(dir, "loads.hcl")
	if err := os.WriteFile(plan, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	explained, att := validateExplainRun(t, plan, b.String())
	ran := map[string]map[string]string{}
	for _, s := range att.Steps {
		if s.Outcome != nil {
			ran[strings.TrimPrefix(s.Addr, "benchmark.")] = s.Outcome.Load
		}
	}
	if len(ran) != len(ls) {
		t.Fatalf("the record keeps the config of %d loads, want %d: %v", len(ran), len(ls), ran)
	}
	for _, k := range lang.Loads {
		held := schema.Shown(k.Defaults())
		defaults := needs(k.Name, "")
		for _, a := range k.Attrs {
			t.Run(k.Name+"."+a.Name, func(t *testing.T) {
				if _, set := defaults[a.Name]; !set {
					got, ok := ran[k.Name+"_default"][a.Name]
					switch {
					case held[a.Name] != a.Default:
						// A default in words ("GET, or POST with a body"):
						// the run works it out; the record says what it was.
					case a.Default == "" && ok:
						t.Errorf("the language shows no default, the run used %q", got)
					case a.Default != "" && got != a.Default:
						t.Errorf("the language shows the default %q, the run used %q", a.Default, got)
					}
				}
				name := k.Name + "_" + a.Name
				want := sample(k.Name, a.Name).shown
				if got := ran[name][a.Name]; got != want {
					t.Errorf("set to %s, the run used %q, want %q", sample(k.Name, a.Name).hcl, got, want)
				}
				if !strings.Contains(explained, "benchmark."+name) {
					t.Errorf("explain does not show step benchmark.%s", name)
				}
			})
		}
	}
}
