package plans

import "github.com/hashicorp/hcl/v2"

// ParseAnySize is Parse without the size limit, for the benchmarks'
// plans of 10,000 steps.
func ParseAnySize(filename string, src []byte) (*Plan, hcl.Diagnostics) {
	return parse(filename, src, len(src))
}

// ParseSyntax is the parse alone as validation does it (parseSyntax).
func ParseSyntax(filename string, src []byte) (*hcl.File, hcl.Diagnostics) {
	file, _, diags := parseSyntax(filename, src, len(src), nil)
	return file, diags
}
