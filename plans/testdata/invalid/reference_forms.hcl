# want: 60:21 Invalid reference
# want: 60:28 Invalid reference
# want: 60:40 Invalid reference
# want: 60:49 Invalid reference
# want: 60:63 Invalid reference
# want: 60:73 Invalid reference
# want: 63:21 Invalid reference
# want: 63:29 Invalid reference
# want: 63:41 Invalid reference
# want: 63:56 Invalid reference
# want: 63:97 Invalid reference
# want: 63:116 Reference to undeclared step
# want: 63:138 Unsupported attribute
# want: 70:45 Unsupported attribute
# want: 70:66 Invalid reference
# want: 70:88 Invalid reference
# want: 70:105 Reference to undeclared probe
# want: 76:17 Invalid reference
# want: 76:43 Invalid reference
# want: 76:59 Unsupported attribute
# want: 76:77 Unsupported attribute
# want: 76:110 Unsupported attribute
# want: 85:47 Reference to undeclared metric
# want: 85:78 Reference to undeclared metric
# want: 85:142 Reference to undeclared metric
# want: 89:53 Reference to undeclared metric
# want: 89:84 Reference to undeclared metric
# want: 89:120 Reference to undeclared metric
# detail: Write var.NAME to refer to a variable.
# detail: Write local.NAME to refer to a local value.
# detail: Write target.NAME to refer to a target.
# detail: Write step.KIND.NAME.ATTR to refer to an earlier step's outputs
# detail: Write self.ATTR, e.g. self.exit_code.
# detail: Write probe.NAME.ATTR, e.g. probe.health.status.
# detail: There is no step kind "nokind".
# detail: There is no run step named "zz".
# detail: has no output "nope".
# detail: This step has no probe named "q".
# detail: declares no metric "nope".
# detail: declares no metric "zz".
// Every form of reference the checks read by its parts: a root alone, a
// name or an attribute written as an index, a step without its name, a
// level's metric.
variable "v" {
  type    = string
  default = "a"
}
locals {
  l = "x"
}
target "t" {
  ssh {
    host = "h"
  }
}
step "run" "a" {
  command = "echo"
}
step "run" "b" {
  command = "echo ${var} ${var["v"]} ${local} ${local["l"]} ${target} ${target["t"]}"
}
step "run" "c" {
  command = "echo ${step} ${step.run} ${step["run"]} ${step.run["a"]} ${step.run.a["stdout"]} ${step.nokind.a.x} ${step.run.zz.stdout} ${step.run.a.nope}"
}
step "wait" "d" {
  probe "http" "p" {
    url = "http://127.0.0.1:1"
  }
  postcondition {
    condition = probe.p["status"] == 200 && probe.p.nope == 1 && probe["p"] == null && probe == null && probe.q.status == 1
  }
}
step "run" "e" {
  command = "echo"
  postcondition {
    condition = self["exit_code"] == 0 && self == null && self.nope == 1 && self.levels[0].metrics.x == 1 && self.best.metrics.x == 1
  }
}
step "benchmark" "f" {
  command = "echo rps=1"
  metric "rps" {
    regex = "rps=(\\d+)"
  }
  postcondition {
    condition = self.best.metrics.rps == 1 && self.best.metrics.nope == 1 && self.levels[0].metrics.nope == 1 && self.metrics["rps"] >= 1 && self.metrics.nope >= 1
  }
}
step "run" "g" {
  command = "echo ${step.benchmark.f.metrics.rps} ${step.benchmark.f.metrics.zz} ${step.benchmark.f.best.metrics.zz} ${step.benchmark.f.levels[0].metrics.zz} ${step.benchmark.f["metrics"]}"
}
