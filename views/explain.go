package views

import "lockstep/plans"

// Explain renders what plans.Explain says of a plan: a title, the steps
// in file order with their facts, then the variables. Markdown is for a
// pull request; JSON is the Explanation itself.
func Explain(x plans.Explanation, f Format) (string, error) {
	return render(f, x, func(d doc) {
		d.subject("Plan", x.Plan, x.File, x.Description)
		if x.Part != "" {
			d.fact("This run", x.Part)
		}
		d.heading(2, "Steps")
		for _, s := range x.Steps {
			d.numbered(s.Number, s.Addr, s.Target, s.Description)
			for _, fact := range s.Facts {
				switch {
				case fact.Items != nil:
					d.checklist(fact.Label, checkItems(fact.Items))
				case fact.Code:
					d.codeFact(fact.Label, fact.Attr, fact.Value, fact.Resolved)
				default:
					d.fact(fact.Label, fact.Value)
				}
			}
		}
		if len(x.Variables) > 0 {
			d.heading(2, "Variables")
			for _, v := range x.Variables {
				d.variable(variableRow{name: v.Name, typ: v.Type, value: v.Value, source: v.Source, desc: v.Description, rules: checkItems(v.Rules)})
			}
		}
	})
}

func checkItems(items []plans.Item) []checkItem {
	out := make([]checkItem, len(items))
	for i, it := range items {
		out[i] = checkItem{text: it.Text, code: it.Code, message: it.Message}
	}
	return out
}
