package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// refs checks every reference in e against what ctx allows.
func (c *checker) refs(e hcl.Expression, ctx refContext, stepIdx int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range e.Variables() {
		if d := c.ref(tr, ctx, stepIdx); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

func attrAt(tr hcl.Traversal, i int) (string, bool) {
	if len(tr) <= i {
		return "", false
	}
	a, ok := tr[i].(hcl.TraverseAttr)
	return a.Name, ok
}

func (c *checker) ref(tr hcl.Traversal, ctx refContext, stepIdx int) *hcl.Diagnostic {
	root := tr.RootName()
	rng := tr.SourceRange()
	errd := func(summary, detail string) *hcl.Diagnostic {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
	}
	var step *Step
	if stepIdx >= 0 {
		step = c.plan.Steps[stepIdx]
	}
	switch root {
	case "var":
		name, ok := attrAt(tr, 1)
		if !ok {
			return errd("Invalid reference", "Write var.NAME to refer to a variable.")
		}
		if c.vars[name] == nil {
			return errd("Reference to undeclared input variable",
				fmt.Sprintf("There is no variable named %q.%s Declare it with a variable %q block, or fix the name.", name, didYouMean(name, keys(c.vars)), name))
		}
	case "local":
		name, ok := attrAt(tr, 1)
		if !ok {
			return errd("Invalid reference", "Write local.NAME to refer to a local value.")
		}
		if ctx == ctxValidation {
			return errd("Invalid reference in validation", "A validation checks the variable's value alone: it can refer to var.NAME, not to locals.")
		}
		if c.locals[name] == nil {
			return errd("Reference to undeclared local value",
				fmt.Sprintf("There is no local named %q.%s Define it in a locals block, or fix the name.", name, didYouMean(name, keys(c.locals))))
		}
	case "target":
		name, ok := attrAt(tr, 1)
		if !ok {
			return errd("Invalid reference", "Write target.NAME to refer to a target.")
		}
		if ctx < ctxAction {
			return errd("Invalid reference", "target.NAME can be used in steps only.")
		}
		if c.targets[name] == nil {
			return errd("Reference to undeclared target",
				fmt.Sprintf("There is no target named %q.%s Declare it with a target %q block, or fix the name.", name, didYouMean(name, keys(c.targets)), name))
		}
	case "step":
		if ctx < ctxAction {
			return errd("Invalid reference", "step outputs exist only while the plan runs; variables, locals and targets cannot use them.")
		}
		kind, ok1 := attrAt(tr, 1)
		name, ok2 := attrAt(tr, 2)
		if !ok1 || !ok2 {
			return errd("Invalid reference", "Write step.KIND.NAME.ATTR to refer to an earlier step's outputs, e.g. step.run.build.stdout.")
		}
		k := c.lang.StepKind(kind)
		if k == nil {
			return errd("Invalid reference", fmt.Sprintf("There is no step kind %q.%s Write step.KIND.NAME.ATTR.", kind, didYouMean(kind, c.stepKindNames())))
		}
		addr := kind + "." + name
		idx, ok := c.steps[addr]
		if !ok {
			var same []string
			for _, s := range c.plan.Steps {
				if s.Kind == kind {
					same = append(same, s.Name)
				}
			}
			return errd("Reference to undeclared step",
				fmt.Sprintf("There is no %s step named %q.%s", kind, name, didYouMean(name, same)))
		}
		if idx == stepIdx {
			return errd("Reference to this step through step",
				fmt.Sprintf("step.%s is the step being checked. Refer to its own outputs with self.ATTR.", addr))
		}
		if idx > stepIdx {
			return errd("Reference to a later step",
				fmt.Sprintf("step.%s is declared at %s, after this step; steps run in file order, so its outputs do not exist yet. Move that step before this one.", addr, where(c.plan.Steps[idx].DeclRange)))
		}
		if attr, ok := attrAt(tr, 3); ok && k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(kind)+" "+kind+" step", attr, k.Self))
		}
	case "self":
		if step == nil {
			return errd("Invalid reference", "self is a step's own observed state; use it inside a step.")
		}
		k := c.lang.StepKind(step.Kind)
		if k == nil {
			return nil // the unknown kind is reported already
		}
		if len(k.Self) == 0 {
			return errd("Invalid reference",
				fmt.Sprintf("%s %s step takes no action, so it has no self outputs. Observe state with a probe block and refer to probe.NAME.ATTR.", article(step.Kind), step.Kind))
		}
		attr, ok := attrAt(tr, 1)
		if !ok {
			return errd("Invalid reference", "Write self.ATTR, e.g. self.exit_code.")
		}
		if ctx < ctxProbe {
			return errd("Invalid reference",
				fmt.Sprintf("self.%s is this step's observed state, known only after its action ran. Use self in postcondition, abort_if, progress or a probe.", attr))
		}
		if k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(step.Kind)+" "+step.Kind+" step", attr, k.Self))
		}
		if attr == "metrics" && len(step.Metrics) > 0 {
			if m, ok := attrAt(tr, 2); ok && !hasMetric(step, m) {
				var names []string
				for _, mm := range step.Metrics {
					names = append(names, mm.Name)
				}
				return errd("Reference to undeclared metric",
					fmt.Sprintf("This step declares no metric %q.%s Its metrics are %s.", m, didYouMean(m, names), strings.Join(names, ", ")))
			}
		}
	case "probe":
		name, ok := attrAt(tr, 1)
		if !ok {
			return errd("Invalid reference", "Write probe.NAME.ATTR, e.g. probe.health.status.")
		}
		if ctx != ctxCheck {
			where := "here"
			if step == nil {
				where = "outside a step"
			}
			return errd("Invalid reference",
				fmt.Sprintf("probe.%s cannot be used %s: probes are observed while the step checks its conditions. Use them in postcondition, abort_if or progress.", name, where))
		}
		var probe *Probe
		var names []string
		for _, p := range step.Probes {
			names = append(names, p.Name)
			if p.Name == name {
				probe = p
			}
		}
		if probe == nil {
			return errd("Reference to undeclared probe",
				fmt.Sprintf("This step has no probe named %q.%s Add a probe \"KIND\" %q block to this step; probes belong to the step that uses them.", name, didYouMean(name, names), name))
		}
		k := c.lang.ProbeKind(probe.Kind)
		if k == nil {
			return nil
		}
		if attr, ok := attrAt(tr, 2); ok && k.Output(attr) == nil {
			return errd("Unsupported attribute", c.outputsDetail(article(probe.Kind)+" "+probe.Kind+" probe", attr, k.Outputs))
		}
	default:
		return errd("Unknown variable",
			fmt.Sprintf("There is no variable named %q.%s References start with var., local., step., probe., self. or target.", root, didYouMean(root, refRoots)))
	}
	return nil
}

func hasMetric(s *Step, name string) bool {
	for _, m := range s.Metrics {
		if m.Name == name {
			return true
		}
	}
	return false
}

func (c *checker) outputsDetail(what, attr string, outs []Output) string {
	var names []string
	for _, o := range outs {
		names = append(names, o.Name)
	}
	return fmt.Sprintf("%s has no output %q.%s Its outputs are %s.", what, attr, didYouMean(attr, names), strings.Join(names, ", "))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
