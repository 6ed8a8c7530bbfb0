package plans_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"lockstep/internal/cpubench"
	"lockstep/plans"
)

// bigPlan writes a plan of n steps cycling through the kinds, each
// referring to variables, locals and earlier steps, as a long real plan
// would.
func bigPlan(n int) []byte {
	var b strings.Builder
	b.WriteString(`plan "big" {}
variable "backend" {
  type    = string
  default = "a"
  validation {
    condition = contains(["a", "b"], var.backend)
  }
}
locals {
  port = 30000
  base = "http://127.0.0.1:${local.port}"
}
target "gpu" {
  ssh {
    host = "gpu-1"
  }
}
`)
	for i := range n {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `step "launch" "s%d" {
  target  = target.gpu
  command = "serve --port ${local.port} --backend ${shellquote(var.backend)}"
  log     = "/tmp/s%d.log"
  timeout = "2m"
  postcondition {
    condition     = strcontains(self.log, "backend=${var.backend}")
    error_message = "wrong backend"
  }
}
`, i, i)
		case 1:
			fmt.Fprintf(&b, `step "wait" "s%d" {
  timeout  = "30m"
  interval = "5s"
  probe "log" "server" {
    step = step.launch.s%d
  }
  probe "http" "health" {
    url = "${local.base}/health"
  }
  postcondition {
    condition = probe.health.status == 200 && strcontains(probe.server.text, "ready")
  }
  abort_if {
    condition = can(regex("Traceback|CUDA error", probe.server.text))
  }
  progress = try(tonumber(regex("shards:\\s+(\\d+)%%", probe.server.last_line)[0]) / 100, null)
}
`, i, i-1)
		case 2:
			fmt.Fprintf(&b, `step "assert" "s%d" {
  probe "http" "chat" {
    url    = "${local.base}/v1/chat/completions"
    method = "POST"
    json   = { model = "default", messages = [{ role = "user", content = "2+2?" }] }
  }
  postcondition {
    condition = probe.chat.status == 200 && strcontains(probe.chat.json.choices[0].message.content, "4")
  }
}
`, i)
		case 3:
			fmt.Fprintf(&b, `step "run" "s%d" {
  command = "echo ${step.launch.s%d.pid}"
  postcondition {
    condition = self.exit_code == 0 && length(self.stdout) > 0
  }
}
`, i, i-3)
		case 4:
			fmt.Fprintf(&b, `step "benchmark" "s%d" {
  load "openai" {
    url         = "${local.base}/v1/chat/completions"
    concurrency = 64
    requests    = 256
  }
  postcondition {
    condition = self.metrics.total_tokens_per_s >= 1000
  }
}
`, i)
		}
	}
	return []byte(b.String())
}

func TestBigPlanIsValid(t *testing.T) {
	p, diags := plans.Parse("big.hcl", bigPlan(100))
	if len(diags) > 0 {
		t.Fatal(diags.Error())
	}
	if len(p.Steps) != 100 {
		t.Fatalf("%d steps, want 100", len(p.Steps))
	}
}

// benchSteps are the sizes of the plans the validate benchmarks read: run
// together, they show how validation grows with a plan and what it costs
// beside hcl's parse of the same file.
var benchSteps = []int{100, 1000, 10000}

// BenchmarkValidate parses and checks plans of 100, 1,000 and 10,000
// steps (29 KB, 295 KB, 3 MB: the largest is beyond the size limit, which
// the benchmark lifts). Besides the wall time it reports cpu-ns/op, the
// CPU time the process spent (its GC's included), which a shared machine
// disturbs far less.
func BenchmarkValidate(b *testing.B) {
	benchPlans(b, func(src []byte) hcl.Diagnostics {
		_, diags := plans.ParseAnySize("big.hcl", src)
		return diags
	})
}

// BenchmarkHCLSyntaxOnly is the floor under BenchmarkValidate: hcl's own
// parse of the same files, with no decoding or checks.
func BenchmarkHCLSyntaxOnly(b *testing.B) {
	benchPlans(b, func(src []byte) hcl.Diagnostics {
		_, diags := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos)
		return diags
	})
}

// BenchmarkParseInPieces is the parse validation starts with: the limits'
// scan of the bytes and hcl's parser on the file in pieces of a few
// kilobytes (parseCut), which costs less than hcl's parse of it whole.
// BenchmarkValidate beside it shows what the decoding and the checks add.
func BenchmarkParseInPieces(b *testing.B) {
	benchPlans(b, func(src []byte) hcl.Diagnostics {
		_, diags := plans.ParseSyntax("big.hcl", src)
		return diags
	})
}

func benchPlans(b *testing.B, read func(src []byte) hcl.Diagnostics) {
	for _, n := range benchSteps {
		src := bigPlan(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			cpu := cpubench.Now()
			for b.Loop() {
				if diags := read(src); diags.HasErrors() {
					b.Fatal(diags.Error())
				}
			}
			cpu.ReportPerOp(b)
		})
	}
}
