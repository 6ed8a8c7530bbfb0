package plans

import (
	"lockstep/schema"
	"lockstep/steps"
)

// stepKinds describes the step kinds, from their registry (steps.Kinds):
// each kind's attributes, defaults and docs are read from its config.
func stepKinds() []StepKind {
	every := map[string]bool{}
	for _, a := range stepAttrs() {
		every[a.Name] = true
	}
	var out []StepKind
	for _, k := range steps.Kinds() {
		defaults := k.Defaults()
		sk := StepKind{
			Name: k.Name, Doc: k.Doc, Blocks: k.Blocks, Self: k.Self, Confirms: k.Confirms,
			Defaults: map[string]string{},
			Kind:     k,
		}
		for _, a := range schema.Attrs(defaults) {
			sk.Defaults[a.Name] = a.Default
			if !every[a.Name] {
				sk.Attrs = append(sk.Attrs, a)
			}
		}
		shown := schema.Shown(defaults)
		sk.DefaultTimeout, sk.DefaultInterval = shown["timeout"], shown["interval"]
		sk.Defaults["timeout"], sk.Defaults["interval"] = shown["timeout"], shown["interval"]
		out = append(out, sk)
	}
	return out
}

// stepAttrs are the attributes every step has.
func stepAttrs() []Attr { return schema.Attrs(steps.Common{Target: "local"}) }
