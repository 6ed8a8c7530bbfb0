package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"lockstep/plans"
	"lockstep/runner/records"
)

// TestStepAttributesRunAsExplained takes every attribute of every step
// kind, as the language declares them (plans.Language, which the docs
// are generated from), through lockstep explain and through a run: once
// left to its default, once set. The run's record keeps the config the
// step ran with (its kind's decoded attributes); it must hold the
// default the language declares, or the value set, and explain must say
// that same value. An attribute added to the language without a value
// to set here, or without explain saying it, fails the test.
func TestStepAttributesRunAsExplained(t *testing.T) {
	dir := t.TempDir()
	lang := plans.Language()
	// What a step of each kind needs to be valid and end at once.
	commands := map[string]string{
		"run":       "true",
		"launch":    fmt.Sprintf("echo $$ > %s/pid; exec sleep 60", dir),
		"benchmark": "echo 7",
	}
	extra := map[string]string{"benchmark": `metric "n" { regex = "(\\d+)" }`}
	// set is, per attribute, a value to set (as written) and the value
	// as shown (docs, explain, the record).
	set := map[string][2]string{
		"target":      {"target.here", "target.here"},
		"description": {`"set by the test"`, "set by the test"},
		"timeout":     {`"7m"`, "7m"},
		"interval":    {`"300ms"`, "300ms"},
		"always":      {"true", "true"},
		"keep":        {"true", "true"},
		"progress":    {"0.5", "0.5"},
		"env":         {`{ A = "b" }`, `{ "A" = "b" }`},
		"workdir":     {strconv.Quote(dir), dir},
		"log":         {strconv.Quote(dir + "/l.log"), dir + "/l.log"},
		"grace":       {`"1s"`, "1s"},
		"pidfile":     {strconv.Quote(dir + "/pid"), dir + "/pid"},
		"adopt":       {"true", "true"},
		"repeat":      {"2", "2"},
	}
	// says is what explain must say of an attribute whose value (as the
	// record shows it) is v: text it holds, or with absent, a label it
	// must not hold; "" when explain need not say it.
	type said struct {
		text   string
		absent bool
	}
	says := map[string]func(v string, cfg map[string]string) said{
		"target": func(v string, _ map[string]string) said {
			return said{text: "on target " + strings.TrimPrefix(v, "target.")}
		},
		"description": func(v string, _ map[string]string) said { return said{text: v} },
		"timeout": func(v string, _ map[string]string) said {
			if v == "" {
				return said{text: "Gives up: at once"}
			}
			return said{text: "Gives up after: " + v}
		},
		"interval": func(v string, cfg map[string]string) said {
			if cfg["timeout"] == "" { // checked once: no interval to tell
				return said{}
			}
			return said{text: "Checks every: " + v}
		},
		"always": func(v string, _ map[string]string) said {
			return said{text: "Always runs: " + map[string]string{"true": "yes", "false": "no"}[v]}
		},
		"keep": func(v string, _ map[string]string) said {
			return said{text: "Keeps: what it launched running after the plan ends", absent: v != "true"}
		},
		"progress": func(v string, _ map[string]string) said { return said{text: "Progress: " + v, absent: v == "null"} },
		"command":  func(v string, _ map[string]string) said { return said{text: ": " + v} },
		"env": func(v string, _ map[string]string) said {
			if v == "{}" {
				return said{text: "Env:", absent: true}
			}
			return said{text: "Env: " + v}
		},
		"workdir": func(v string, _ map[string]string) said { return said{text: "Workdir: " + v, absent: v == ""} },
		"log": func(v string, _ map[string]string) said {
			if v == "" {
				return said{text: "Log: a fresh file under .lockstep/"}
			}
			return said{text: "Log: " + v}
		},
		"grace": func(v string, _ map[string]string) said { return said{text: "grace period: " + v} },
		"pidfile": func(v string, _ map[string]string) said {
			if v == "" {
				return said{text: "Follows the daemon", absent: true}
			}
			return said{text: "Follows the daemon named in: " + v}
		},
		"adopt": func(v string, _ map[string]string) said {
			return said{text: "Adopts a server an earlier attempt kept on the plan's port: " + v, absent: v != "true"}
		},
		"repeat": func(v string, _ map[string]string) said {
			return said{text: "Repeats: " + v + " times", absent: v == "1"}
		},
	}
	// Quotes differ between a value as written (explain) and as shown
	// (a map's keys): compared without them.
	unquote := func(s string) string { return strings.ReplaceAll(s, `"`, "") }
	// tells says whether a line of explained says text: the whole value,
	// perhaps followed by a remark ("1h (the default)", "no: skipped
	// once a step has failed").
	tells := func(explained, text string) bool {
		for _, line := range strings.Split(unquote(explained), "\n") {
			if _, rest, ok := strings.Cut(line, unquote(text)); ok && (rest == "" || strings.HasPrefix(rest, " (") || rest[0] == ':' || rest[0] == ',') {
				return true
			}
		}
		return false
	}

	for _, kind := range lang.Steps {
		attrs := append(slices.Clone(lang.Step.Attrs), kind.Attrs...)
		for _, setting := range []bool{false, true} {
			name := kind.Name + "/default"
			if setting {
				name = kind.Name + "/set"
			}
			t.Run(name, func(t *testing.T) {
				var body []string
				want := map[string]string{}
				for _, a := range attrs {
					v, ok := set[a.Name]
					if a.Name == "command" {
						v, ok = [2]string{strconv.Quote(commands[kind.Name]), commands[kind.Name]}, true
					}
					if !ok {
						t.Fatalf("%s: no value to set it to in this test: add one", a.Name)
					}
					if setting || a.Required || a.Name == "command" {
						body = append(body, a.Name+" = "+v[0])
						want[a.Name] = v[1]
						continue
					}
					// The default the language declares; a default in
					// words ("the target's workdir") is no value: the
					// record holds none.
					want[a.Name] = kind.Defaults[a.Name]
					if strings.Contains(want[a.Name], " ") {
						want[a.Name] = ""
					}
				}
				plan := fmt.Sprintf("target \"here\" {}\n\nstep %q \"s\" {\n  %s\n  %s\n  postcondition {\n    condition = true\n  }\n}\n",
					kind.Name, strings.Join(body, "\n  "), extra[kind.Name])
				file := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".hcl")
				if err := os.WriteFile(file, []byte(plan), 0o600); err != nil {
					t.Fatal(err)
				}

				var out, errb strings.Builder
				if code := run([]string{"explain", file}, &out, &errb); code != 0 {
					t.Fatalf("explain exited %d: %s\n%s", code, errb.String(), plan)
				}
				explained := out.String()

				recs := filepath.Join(dir, "records")
				out.Reset()
				errb.Reset()
				code := run([]string{"run", "--plain", "--records", recs, file}, &out, &errb)
				atts, err := records.List(recs, strings.TrimSuffix(filepath.Base(file), ".hcl"))
				if err != nil || len(atts) == 0 || len(atts[len(atts)-1].Steps) != 1 || atts[len(atts)-1].Steps[0].Outcome == nil {
					t.Fatalf("run exited %d, no record of its step (%v):\n%s%s", code, err, out.String(), errb.String())
				}
				outcome := atts[len(atts)-1].Steps[0].Outcome
				if pgid, err := strconv.Atoi(outcome.Outputs["pgid"]); err == nil && want["keep"] == "true" {
					// Kept, as asked: stopped here.
					defer syscall.Kill(-pgid, syscall.SIGKILL)
				}
				if code != 0 {
					t.Fatalf("run exited %d:\n%s%s\n%s", code, out.String(), errb.String(), plan)
				}
				ran := outcome.Config
				for _, a := range attrs {
					if got := ran[a.Name]; got != want[a.Name] {
						t.Errorf("%s: the run used %q, want %q (the language's default, or as set)", a.Name, got, want[a.Name])
					}
					say, ok := says[a.Name]
					if !ok {
						t.Errorf("%s: this test does not know how explain says it: teach it (or teach explain to say it)", a.Name)
						continue
					}
					s := say(ran[a.Name], ran)
					if s.text == "" {
						continue
					}
					has := tells(explained, s.text)
					if s.absent {
						has = strings.Contains(unquote(explained), unquote(s.text))
					}
					if has == s.absent {
						verb := "does not say"
						if s.absent {
							verb = "says"
						}
						t.Errorf("%s: explain %s %q, but the run used %q:\n%s", a.Name, verb, s.text, ran[a.Name], explained)
					}
				}
			})
		}
	}
}
