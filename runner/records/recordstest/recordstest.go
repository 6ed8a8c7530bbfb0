// Package recordstest holds the events of four recorded attempts of a
// GLM-5 bring-up, as the runner emits them: the fixture the tests of
// records (writing and reading back) and of views (rendering) share. It
// imports only events, so records' own tests can use it.
package recordstest

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"lockstep/runner/events"
)

// The fixtures are written in a fixed zone so golden outputs do not depend
// on the machine's.
var Zone = time.FixedZone("CET", 3600)

var T0 = time.Date(2026, 11, 29, 22, 10, 0, 0, Zone)

// At is T0 plus d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// Steps are the plan's four steps.
var Steps = []events.Step{
	{Addr: "launch.server", Kind: "launch", Name: "server", Index: 0, Count: 4, Target: "gpu", Timeout: 2 * time.Minute},
	{Addr: "wait.ready", Kind: "wait", Name: "ready", Index: 1, Count: 4, Target: "gpu", Timeout: 30 * time.Minute},
	{Addr: "assert.coherent", Kind: "assert", Name: "coherent", Index: 2, Count: 4, Target: "gpu"},
	{Addr: "benchmark.throughput", Kind: "benchmark", Name: "throughput", Index: 3, Count: 4, Target: "gpu"},
}

// Secret is a sensitive value the tests look for in what is written.
const Secret = "hunter2-s3cr3t"

// Run is what differs between the fixture attempts.
type Run struct {
	Backend string
	Note    string
	Dies    bool    // the server dies while loading: wait.ready fails
	Tokens  float64 // benchmark result
	P99     float64
	Start   time.Duration // offset of the attempt's start from T0
	Plan    string        // the plan's text, PlanV1 if empty
}

func sha(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Events is a whole attempt as the runner would emit it.
func Events(r Run) []events.Event {
	base := r.Start
	if r.Plan == "" {
		r.Plan = PlanV1
	}
	ev := func(d time.Duration, e events.Event) events.Event {
		e.Time = At(base + d)
		e.Plan = "glm5"
		return e
	}
	step := func(i int) *events.Step { s := Steps[i]; return &s }
	vars := map[string]string{"moe_backend": `"` + r.Backend + `"`, "api_token": "(sensitive)", "port": "30000"}
	out := []events.Event{
		ev(0, events.Event{Type: events.AttemptStarted, Version: events.Version, Start: &events.Start{
			PlanFile:   "/home/me/glm5.hcl",
			PlanSHA256: sha(r.Plan),
			Vars:       vars,
			Defaults:   map[string]string{"moe_backend": `"flashinfer_cutlass"`, "port": "30000"},
			Host:       "bench-1",
			User:       "me",
			Note:       r.Note,
			Args:       []string{"lockstep", "run", "glm5.hcl", "-var", "moe_backend=" + r.Backend, "-var", "api_token=(sensitive)"},
			Steps:      Steps,
		}}),
		ev(0, events.Event{Type: events.StepStarted, Step: step(0)}),
		ev(10*time.Millisecond, events.Event{Type: events.StepAction, Step: step(0), Action: &events.Action{
			Command: "python3 -m sglang.launch_server --tp 8 --port 30000 --moe-runner-backend " + r.Backend,
			PID:     4242, PGID: 4242, Log: "/root/sglang.log", MovedLog: "/root/sglang.log.1",
		}}),
		ev(2*time.Second, events.Event{Type: events.StepFinished, Step: step(0), Outcome: &events.Outcome{
			Status: events.Confirmed, Duration: 2 * time.Second,
			Outputs: map[string]string{"pid": "4242"},
			Evidence: &events.Evidence{Conditions: []events.Condition{{
				Kind: "postcondition", Source: `strcontains(self.log, "moe_runner_backend='${var.moe_backend}'")`,
				Range: "glm5.hcl:31:5", State: events.CondHeld,
			}}, LogLines: []string{"server_args=ServerArgs(moe_runner_backend='" + r.Backend + "')"}},
		}}),
		ev(2*time.Second, events.Event{Type: events.StepStarted, Step: step(1)}),
	}
	for i := range 4 {
		out = append(out, ev(time.Duration(7+5*i)*time.Second, events.Event{Type: events.Observed, Step: step(1), Observation: &events.Observation{
			Values:  map[string]string{"probe.health.status": "null"},
			Summary: "probe.health.status: connection refused",
		}}))
	}
	if r.Dies {
		out = append(out,
			ev(25*time.Second, events.Event{Type: events.StepFinished, Step: step(1), Outcome: &events.Outcome{
				Status: events.Failed, Duration: 23 * time.Second,
				Reason:       "process 4242 (launch.server) exited with status 1",
				ErrorMessage: "the server reported an error while loading",
				Evidence: &events.Evidence{
					Conditions: []events.Condition{
						{Kind: "postcondition", Source: "probe.health.status == 200", Range: "glm5.hcl:48:5", State: events.CondNotYet, Reason: "connection refused"},
						{Kind: "abort_if", Source: `can(regex("Traceback|CUDA error", probe.server.text))`, Range: "glm5.hcl:54:5", State: events.CondHeld, ErrorMessage: "the server reported an error while loading"},
					},
					Values:   map[string]string{"probe.health.status": "null"},
					LogLines: []string{"Traceback (most recent call last):"},
					LogTail:  map[string][]string{"launch.server": {"Loading safetensors shards: 41%", "Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access was encountered"}},
					History: []events.Sample{
						{Time: At(base + 17*time.Second), Summary: "probe.health.status: connection refused"},
						{Time: At(base + 22*time.Second), Summary: "probe.health.status: connection refused"},
					},
				},
			}}),
			ev(25*time.Second, events.Event{Type: events.StepFinished, Step: step(2), Outcome: &events.Outcome{Status: events.Skipped, Reason: "an earlier step failed"}}),
			ev(25*time.Second, events.Event{Type: events.StepFinished, Step: step(3), Outcome: &events.Outcome{Status: events.Skipped, Reason: "an earlier step failed"}}),
			ev(25*time.Second, events.Event{Type: events.ProcessStopped, Step: step(0), Cleanup: &events.Cleanup{PID: 4242, Result: "already exited with status 1"}}),
			ev(25*time.Second, events.Event{Type: events.AttemptFinished, Outcome: &events.Outcome{
				Status: events.Failed, Failed: "wait.ready", Duration: 25 * time.Second,
				Reason:       "process 4242 (launch.server) exited with status 1",
				ErrorMessage: "the server reported an error while loading",
			}}),
		)
		return out
	}
	out = append(out,
		ev(30*time.Second, events.Event{Type: events.StepFinished, Step: step(1), Outcome: &events.Outcome{
			Status: events.Confirmed, Duration: 28 * time.Second,
			Evidence: &events.Evidence{Conditions: []events.Condition{
				{Kind: "postcondition", Source: "probe.health.status == 200", Range: "glm5.hcl:48:5", State: events.CondHeld},
			}, Values: map[string]string{"probe.health.status": "200"}},
		}}),
		ev(30*time.Second, events.Event{Type: events.StepStarted, Step: step(2)}),
		ev(31*time.Second, events.Event{Type: events.StepFinished, Step: step(2), Outcome: &events.Outcome{
			Status: events.Confirmed, Duration: time.Second,
			Evidence: &events.Evidence{Conditions: []events.Condition{
				{Kind: "postcondition", Source: `probe.chat.status == 200 && strcontains(probe.chat.json.choices[0].message.content, "4")`, State: events.CondHeld},
			}, Values: map[string]string{"probe.chat.status": "200", "probe.chat.json.choices[0].message.content": `"4"`}},
		}}),
		ev(31*time.Second, events.Event{Type: events.StepStarted, Step: step(3)}),
		ev(31*time.Second, events.Event{Type: events.Warning, Step: step(3), Message: "load: 12 requests queued past the warmup"}),
		ev(61*time.Second, events.Event{Type: events.Progressed, Step: step(3), Progress: &events.Progress{Elapsed: 30 * time.Second, Done: 2048, Rate: 68.3}}),
		ev(31*time.Second, events.Event{Type: events.StepAction, Step: step(3), Action: &events.Action{Command: "load openai http://127.0.0.1:30000/v1/chat/completions concurrency=1024 requests=4096"}}),
		ev(91*time.Second, events.Event{Type: events.StepFinished, Step: step(3), Outcome: &events.Outcome{
			Status: events.Confirmed, Duration: time.Minute,
			Metrics: map[string]float64{
				"total_tokens_per_s": r.Tokens, "output_tokens_per_s": r.Tokens / 4, "requests_per_s": r.Tokens / 1000,
				"ttft_p99_ms": r.P99, "latency_p99_ms": r.P99 * 3, "errors": 0, "achieved_concurrency": 1010,
			},
			Stats: map[string]events.MetricStats{"total_tokens_per_s": {
				Values: []float64{r.Tokens * 0.98, r.Tokens, r.Tokens * 1.01}, Median: r.Tokens, Min: r.Tokens * 0.98, Max: r.Tokens * 1.01, Stddev: r.Tokens * 0.0125,
			}},
			Evidence: &events.Evidence{Conditions: []events.Condition{
				{Kind: "postcondition", Source: "self.metrics.total_tokens_per_s >= 1000", State: events.CondHeld},
			}},
		}}),
		ev(92*time.Second, events.Event{Type: events.ProcessStopped, Step: step(0), Cleanup: &events.Cleanup{PID: 4242, Result: "stopped with SIGTERM"}}),
		ev(92*time.Second, events.Event{Type: events.AttemptFinished, Outcome: &events.Outcome{Status: events.Confirmed, Duration: 92 * time.Second}}),
	)
	return out
}

// PlanV1 and PlanV2 are the plan before and after its timeout changed.
const PlanV1 = `plan "glm5" {
  description = "Bring up GLM-5 and measure throughput"
}

variable "moe_backend" {
  type    = string
  default = "flashinfer_cutlass"
}

step "wait" "ready" {
  timeout = "30m"
}
`

const PlanV2 = `plan "glm5" {
  description = "Bring up GLM-5 and measure throughput"
}

variable "moe_backend" {
  type    = string
  default = "flashinfer_cutlass"
}

step "wait" "ready" {
  timeout  = "45m"
  interval = "5s"
}
`
