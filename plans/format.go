package plans

import "github.com/hashicorp/hcl/v2/hclwrite"

// Format lays out HCL source canonically (hclwrite's layout: aligned
// equals signs, two-space indents). It does not check that src is a valid
// plan; source with syntax errors comes back as hclwrite leaves it.
func Format(src []byte) []byte {
	return hclwrite.Format(src)
}
