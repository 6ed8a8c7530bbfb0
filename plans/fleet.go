package plans

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// A fleet is a target whose ssh block names many hosts (hosts = [...]).
// A step on it runs once per host, each run seeing its own host in
// target.host, target.rank and target.hosts; what it leaves for later
// steps is a list of each host's outputs, in rank order, each with its
// host and rank (step.launch.server[2].pid, step.launch.server[*].pid).

// FleetAttrs are the attributes of target a step on a fleet reads:
// target.host, target.rank and target.hosts. No target may be named so.
var FleetAttrs = []string{"host", "rank", "hosts"}

// Fleet reports whether the target names many hosts.
func (t *Target) Fleet() bool { return t != nil && t.SSH != nil && t.SSH.Hosts != nil }

// FleetHosts evaluates the target's hosts in the scope: each a name or an
// ssh_config alias, in rank order, at least one, none twice.
func (s *Scope) FleetHosts(t *Target) ([]string, error) {
	v, diags := t.SSH.Hosts.Value(s.EvalContext(nil))
	if diags.HasErrors() {
		return nil, fmt.Errorf("hosts: %s", diags.Error())
	}
	return hostList(v)
}

func hostList(v cty.Value) ([]string, error) {
	v, _ = v.UnmarkDeep()
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || l.IsNull() {
		return nil, fmt.Errorf("hosts must be a list of host names, not %s", v.Type().FriendlyName())
	}
	var hosts []string
	seen := map[string]bool{}
	for it := l.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.AsString() == "" {
			return nil, fmt.Errorf("hosts[%d] is empty: each element names a host", len(hosts))
		}
		h := e.AsString()
		if seen[h] {
			return nil, fmt.Errorf("hosts names %q twice: each host runs a step once", h)
		}
		seen[h] = true
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("hosts is empty: name at least one host")
	}
	return hosts, nil
}

// ForHost is the scope a step on a fleet sees on one of its hosts:
// target.host, target.rank and target.hosts beside the targets.
func (s *Scope) ForHost(host string, rank int, hosts []string) *Scope {
	h := *s
	h.targets = withFleetAttrs(s.targets, cty.StringVal(host), cty.NumberIntVal(int64(rank)), stringList(hosts))
	return &h
}

func withFleetAttrs(targets, host, rank, hosts cty.Value) cty.Value {
	m := map[string]cty.Value{}
	if targets != cty.NilVal && targets.Type().IsObjectType() {
		for k, v := range targets.AsValueMap() {
			m[k] = v
		}
	}
	m["host"], m["rank"], m["hosts"] = host, rank, hosts
	return cty.ObjectVal(m)
}

func stringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	var vs []cty.Value
	for _, s := range ss {
		vs = append(vs, cty.StringVal(s))
	}
	return cty.ListVal(vs)
}

// FleetOutputs is what later steps read of a step on a fleet: each
// host's outputs, in rank order, with its host and rank.
func FleetOutputs(hosts []string, outputs []cty.Value) cty.Value {
	var vs []cty.Value
	for i, h := range hosts {
		m := map[string]cty.Value{}
		if i < len(outputs) && outputs[i] != cty.NilVal && outputs[i].Type().IsObjectType() {
			for k, v := range outputs[i].AsValueMap() {
				m[k] = v
			}
		}
		m["host"], m["rank"] = cty.StringVal(h), cty.NumberIntVal(int64(i))
		vs = append(vs, cty.ObjectVal(m))
	}
	if len(vs) == 0 {
		return cty.EmptyTupleVal
	}
	return cty.TupleVal(vs)
}

// fleetSelf is the typed stand-in of a fleet step's outputs for the
// checks: a list of its kind's self, each with host and rank.
func fleetSelf(self cty.Value) cty.Value {
	ty := map[string]cty.Type{"host": cty.String, "rank": cty.Number}
	if self.Type().IsObjectType() {
		for k, t := range self.Type().AttributeTypes() {
			ty[k] = t
		}
	}
	return cty.UnknownVal(cty.List(cty.Object(ty)))
}

// checkFleet checks a fleet's hosts where they are known before the run.
func checkFleet(t *Target, v cty.Value) hcl.Diagnostics {
	if v == cty.NilVal || !v.IsWhollyKnown() {
		return nil
	}
	if _, err := hostList(v); err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid hosts",
			Detail:   err.Error() + `, e.g. hosts = ["n1", "n2"] or hosts = var.nodes.`,
			Subject:  t.SSH.Hosts.Range().Ptr(),
		}}
	}
	return nil
}

// checkTargetName refuses a target named as one of target's fleet
// attributes: target.rank could not say which it means.
func checkTargetName(t *Target) hcl.Diagnostics {
	for _, a := range FleetAttrs {
		if t.Name == a {
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Reserved target name",
				Detail:   fmt.Sprintf("target.%s is the %s a step on a fleet runs on; give this target another name.", a, map[string]string{"host": "host", "rank": "rank of the host", "hosts": "list of hosts"}[a]),
				Subject:  t.DeclRange.Ptr(),
			}}
		}
	}
	return nil
}

// fleetAttrRef checks target.host, target.rank and target.hosts: they
// exist in a step on a fleet only.
func (c *checker) fleetAttrRef(name string, step *Step, errd func(summary, detail string) *hcl.Diagnostic) *hcl.Diagnostic {
	if step == nil || !c.targets[step.Target].Fleet() {
		return errd("Reference to target."+name+" outside a fleet",
			fmt.Sprintf("target.%s is the host a step on a fleet (a target with ssh { hosts = [...] }) runs on; this step's target %q names one machine.", name, step.targetName()))
	}
	return nil
}

func (s *Step) targetName() string {
	if s == nil {
		return ""
	}
	return s.Target
}

// fleetStepRef checks a reference to a fleet step's outputs: they are a
// list, read by rank ([2]), all at once ([*]), or with byhost.
func (c *checker) fleetStepRef(tr hcl.Traversal, addr string, errd func(summary, detail string) *hcl.Diagnostic) *hcl.Diagnostic {
	if len(tr) > 3 {
		if a, ok := tr[3].(hcl.TraverseAttr); ok {
			return errd("Reference to one output of a fleet step",
				fmt.Sprintf("step.%s ran on every host of its fleet: its outputs are a list, one per host in rank order. Write step.%s[0].%s for rank 0, step.%s[*].%s for every host, or byhost(step.%s)[\"n1\"].%s.", addr, addr, a.Name, addr, a.Name, addr, a.Name))
		}
	}
	return nil
}

// byhostFunc turns a fleet step's outputs, a list of objects each with
// its host, into a map by host name.
var byhostFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "outputs", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		switch {
		case ty.IsListType():
			return cty.Map(ty.ElementType()), nil
		case ty.IsTupleType():
			return cty.DynamicPseudoType, nil
		case ty == cty.DynamicPseudoType:
			return cty.DynamicPseudoType, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "byhost takes a fleet step's outputs (step.KIND.NAME of a step on a fleet), not a %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		v := args[0]
		if !v.IsWhollyKnown() {
			return cty.UnknownVal(ret), nil
		}
		m := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if !e.Type().IsObjectType() || !e.Type().HasAttribute("host") {
				return cty.NilVal, function.NewArgErrorf(0, "byhost takes a fleet step's outputs: each element has a host")
			}
			m[e.GetAttr("host").AsString()] = e
		}
		if ret.IsMapType() {
			if len(m) == 0 {
				return cty.MapValEmpty(ret.ElementType()), nil
			}
			return cty.MapVal(m), nil
		}
		return cty.ObjectVal(m), nil
	},
})

// checkFleetStep refuses the fleet attributes on a step that runs on one
// machine: they would be read as a rule that decides nothing.
func (c *checker) checkFleetStep(s *Step) hcl.Diagnostics {
	if c.targets[s.Target].Fleet() || c.targets[s.Target] == nil {
		return nil
	}
	var diags hcl.Diagnostics
	for _, name := range []string{"max_failures", "min_confirmed", "leader_first"} {
		if e, ok := s.Attrs[name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Fleet attribute on one machine",
				Detail:   fmt.Sprintf("%s says how a step on many hosts decides; target %q is one machine. Remove it, or run the step on a target with ssh { hosts = [...] }.", name, s.Target),
				Subject:  e.Range().Ptr(),
			})
		}
	}
	return diags
}

// fleetText is how explain names a fleet target: "gpus (ssh, 3 hosts:
// n1, n2, n3)", or the hosts expression when it is known only at run time.
func fleetText(e *explain, t *Target) string {
	hosts := e.plainText(t.SSH.Hosts)
	if e.scope != nil {
		if hs, err := e.scope.FleetHosts(t); err == nil {
			hosts = fmt.Sprintf("%d hosts: %s", len(hs), strings.Join(hs, ", "))
		}
	}
	return t.Name + " (ssh, " + hosts + ")"
}

// fleetRule is how explain tells what decides a step on a fleet.
func (e *explain) fleetRule(s *Step) {
	rule := "every host confirms (each host runs the step at once)"
	mf, okF := s.Attrs["max_failures"]
	mc, okC := s.Attrs["min_confirmed"]
	switch {
	case okF && okC:
		rule = fmt.Sprintf("at most %s hosts fail and at least %s confirm", e.plainText(mf), e.plainText(mc))
	case okF:
		rule = fmt.Sprintf("at most %s hosts fail", e.plainText(mf))
	case okC:
		rule = fmt.Sprintf("at least %s hosts confirm", e.plainText(mc))
	}
	if _, ok := s.Attrs["leader_first"]; ok && s.Attrs["leader_first"] != nil {
		if v, diags := s.Attrs["leader_first"].Value(nil); !diags.HasErrors() && v.True() {
			rule += "; rank 0 first, the others once it confirmed"
		}
	}
	e.field("On the fleet", rule)
}
