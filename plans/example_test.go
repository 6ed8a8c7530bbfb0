package plans_test

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
)

func Example() {
	src := []byte(`
variable "backend" {
  default = "cutlass"
}

variable "token" {
  default   = "hunter2"
  sensitive = true
}

step "launch" "server" {
  command = "serve --backend ${shellquote(var.backend)} --token ${var.token}"
  postcondition {
    condition = strcontains(self.log, "backend=${var.backend}")
  }
}
`)
	p, diags := plans.Parse("example.hcl", src)
	if diags.HasErrors() {
		hcl.NewDiagnosticTextWriter(os.Stderr, p.Files, 78, false).WriteDiagnostics(diags)
		return
	}
	// The plan is valid, with warnings: var.token goes into the command
	// line (ps on the host would show it), and unquoted.
	for _, d := range diags {
		fmt.Println(d.Summary)
	}

	scope, diags := p.Resolve(plans.Inputs{Vars: []string{"backend=triton"}})
	if diags.HasErrors() {
		return
	}
	step := p.Steps[0]
	cmd, _ := step.Command.Value(scope.EvalContext(nil))
	fmt.Println(step.Addr(), "command is sensitive:", cmd.HasMark(plans.Sensitive))

	// Conditions see the step's observed state as self.
	self := cty.ObjectVal(map[string]cty.Value{"log": cty.StringVal("config: backend=triton\n")})
	ok, _ := step.Postconditions[0].Condition.Value(scope.EvalContext(map[string]cty.Value{"self": self}))
	fmt.Println(step.Postconditions[0].Source, "=", ok.True())

	// The step's attributes as its kind decodes them for the run, the
	// kind's defaults filled in.
	cfg, _, _ := scope.StepConfig(step, nil)
	fmt.Println("gives up after", time.Duration(cfg.Step().Timeout))
	// Output:
	// Sensitive value in a command line
	// Unquoted value in a command
	// launch.server command is sensitive: true
	// strcontains(self.log, "backend=${var.backend}") = true
	// gives up after 2m0s
}
