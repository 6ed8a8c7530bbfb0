package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lockstep/plans"
	"lockstep/runner/records"
	"lockstep/schema"
)

// probeSample is a value a probe attribute is set to in
// TestProbeAttributesRunAsExplained: as written in the plan, and as the
// record must show the config the probe ran with.
type probeSample struct {
	hcl, shown string
}

// probeSamples is, for each probe attribute, a value other than its
// default that a probe runs with on this machine. An attribute added to a
// probe kind without a sample here fails the test: say what it runs with.
func probeSamples(dir, url string, port int) map[string]probeSample {
	file := filepath.Join(dir, "watched.log")
	return map[string]probeSample{
		"exec.command":          {`"true"`, "true"},
		"exec.env":              {`{ MODE = "test" }`, `{ "MODE" = "test" }`},
		"http.url":              {strconv.Quote(url), url},
		"http.method":           {`"PUT"`, "PUT"},
		"http.headers":          {`{ X-Probe = "yes" }`, `{ "X-Probe" = "yes" }`},
		"http.body":             {`"hello"`, "hello"},
		"http.json":             {`{ ready = true }`, `{"ready":true}`},
		"http.timeout":          {`"3s"`, "3s"},
		"http.follow_redirects": {`true`, "true"},
		"http.require_own":      {`false`, "false"},
		"log.path":              {strconv.Quote(file), file},
		"log.step":              {`step.launch.server`, "step.launch.server"},
		"log.since":             {`step.launch.server`, "step.launch.server"},
		"process.match":         {`"sleep"`, "sleep"},
		"process.pid":           {strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getpid())},
		"process.step":          {`step.launch.server`, "step.launch.server"},
		"port.port":             {strconv.Itoa(port), strconv.Itoa(port)},
		"port.host":             {`"localhost"`, "localhost"},
		"file.path":             {strconv.Quote(file), file},
	}
}

// Every attribute of every probe kind, taken from plans.Language() (what
// validate checks, explain and the docs show), goes through validate,
// explain and a run of the real command, once left to its default and
// once set: the config each probe ran with, as the run's record keeps it,
// holds the default the language shows, or the value set.
func TestProbeAttributesRunAsExplained(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(records.EnvRoot, "")
	if err := os.WriteFile(filepath.Join(dir, "watched.log"), []byte("started\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer srv.Close()
	_, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	// The http probes talk to the server the plan launches, as a plan's
	// do: an answer from another process (this test's) would fail them
	// (require_own).
	served, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	samples := probeSamples(dir, fmt.Sprintf("http://127.0.0.1:%d/", served), port)

	// One probe per kind with only what it needs (kind_default), and one
	// per attribute with that attribute set (kind_attr).
	type probe struct {
		kind, name string
		attrs      map[string]string // attribute -> HCL
	}
	var ps []probe
	sample := func(kind, attr string) probeSample {
		s, ok := samples[kind+"."+attr]
		if !ok {
			t.Fatalf("probe %q attribute %q has no sample value in probeSamples: add one it runs with", kind, attr)
		}
		return s
	}
	lang := plans.Language()
	defaultAttrs := map[string]map[string]string{} // kind -> what its default probe sets
	for _, k := range lang.Probes {
		if len(k.Attrs) == 0 {
			continue // nothing to set (gpu)
		}
		needs := func(except string) map[string]string {
			m := map[string]string{}
			for _, a := range k.Attrs {
				if a.Required && a.Name != except {
					m[a.Name] = sample(k.Name, a.Name).hcl
				}
			}
			if len(k.OneOf) > 0 && !slices.Contains(k.OneOf, except) {
				m[k.OneOf[0]] = sample(k.Name, k.OneOf[0]).hcl
			}
			return m
		}
		ps = append(ps, probe{k.Name, k.Name + "_default", needs("")})
		defaultAttrs[k.Name] = needs("")
		for _, a := range k.Attrs {
			m := needs(a.Name)
			m[a.Name] = sample(k.Name, a.Name).hcl
			if a.Name == "since" {
				m["path"] = sample(k.Name, "path").hcl // since is for a probe with path
			}
			ps = append(ps, probe{k.Name, k.Name + "_" + a.Name, m})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "step \"launch\" \"server\" {\n  command = \"exec python3 -m http.server %d --bind 127.0.0.1\"\n  grace   = \"0s\"\n}\n\n", served)
	b.WriteString("step \"assert\" \"probes\" {\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "  probe %q %q {\n", p.kind, p.name)
		writeAttrs(&b, "    ", p.attrs)
		b.WriteString("  }\n")
	}
	b.WriteString("  postcondition {\n    condition = true\n  }\n}\n")
	plan := filepath.Join(dir, "kinds.hcl")
	if err := os.WriteFile(plan, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	explained, att := validateExplainRun(t, plan, b.String())
	var ran map[string]map[string]string
	for _, s := range att.Steps {
		if s.Addr == "assert.probes" && s.Outcome != nil {
			ran = s.Outcome.Probes
		}
	}
	if len(ran) != len(ps) {
		t.Fatalf("the record keeps the config of %d probes, want %d: %v", len(ran), len(ps), ran)
	}

	for _, k := range lang.Probes {
		if len(k.Attrs) == 0 {
			continue
		}
		// What the struct holds before its block is read: where a
		// default is written in words (a default tag), the struct holds
		// its zero and the kind works the value out when it runs.
		held := schema.Shown(k.Defaults())
		defaults := defaultAttrs[k.Name]
		for _, a := range k.Attrs {
			t.Run(k.Name+"."+a.Name, func(t *testing.T) {
				if _, set := defaults[a.Name]; !set {
					got, ok := ran[k.Name+"_default"][a.Name]
					switch {
					case held[a.Name] != a.Default:
						if ok {
							t.Errorf("left to its default (%q), the run used %q", a.Default, got)
						}
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
				if !strings.Contains(explained, fmt.Sprintf("Probe %q", name)) {
					t.Errorf("explain does not show probe %s:\n%s", name, explained)
				}
			})
		}
	}
}
