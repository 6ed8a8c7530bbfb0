package plans

import (
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// ShowValue renders a value as HCL would write it: "text", 3, true,
// ["a", "b"]. A value marked Sensitive (or holding one) shows as
// (sensitive), an unknown one as (known at run time).
func ShowValue(v cty.Value) string { return showValue(v) }

func showValue(v cty.Value) string {
	if v == cty.NilVal {
		return "(none)"
	}
	if v.ContainsMarked() {
		return "(sensitive)"
	}
	if !v.IsWhollyKnown() {
		return "(known at run time)"
	}
	return string(hclwrite.TokensForValue(v).Bytes())
}
