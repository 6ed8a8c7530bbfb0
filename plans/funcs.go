package plans

import (
	"encoding/base64"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the functions available in plan expressions: go-cty's
// standard library under the names Terraform users know, hcl's can and
// try, and the few lockstep adds (shellquote, strcontains, startswith,
// endswith, a length that also counts a string's characters). Each call
// returns a new map.
func Functions() map[string]function.Function {
	fs := map[string]function.Function{
		"abs":          stdlib.AbsoluteFunc,
		"base64encode": base64encodeFunc,
		"byhost":       byhostFunc,
		"ceil":         stdlib.CeilFunc,
		"chomp":        stdlib.ChompFunc,
		"coalesce":     stdlib.CoalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc,
		"compact":      stdlib.CompactFunc,
		"concat":       stdlib.ConcatFunc,
		"contains":     stdlib.ContainsFunc,
		"distinct":     stdlib.DistinctFunc,
		"element":      stdlib.ElementFunc,
		"endswith":     stringTest("suffix", strings.HasSuffix),
		"flatten":      stdlib.FlattenFunc,
		"floor":        stdlib.FloorFunc,
		"format":       stdlib.FormatFunc,
		"formatlist":   stdlib.FormatListFunc,
		"indent":       stdlib.IndentFunc,
		"join":         stdlib.JoinFunc,
		"jsondecode":   stdlib.JSONDecodeFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"keys":         stdlib.KeysFunc,
		"length":       lengthFunc,
		"lookup":       stdlib.LookupFunc,
		"lower":        stdlib.LowerFunc,
		"max":          stdlib.MaxFunc,
		"merge":        stdlib.MergeFunc,
		"min":          stdlib.MinFunc,
		"parseint":     stdlib.ParseIntFunc,
		"range":        stdlib.RangeFunc,
		"regex":        typeByPattern(stdlib.RegexFunc),
		"regexall":     typeByPattern(stdlib.RegexAllFunc),
		"replace":      stdlib.ReplaceFunc,
		"reverse":      stdlib.ReverseListFunc,
		"shellquote":   shellquoteFunc,
		"slice":        stdlib.SliceFunc,
		"sort":         stdlib.SortFunc,
		"split":        stdlib.SplitFunc,
		"startswith":   stringTest("prefix", strings.HasPrefix),
		"strcontains":  stringTest("substr", strings.Contains),
		"strlen":       stdlib.StrlenFunc,
		"substr":       stdlib.SubstrFunc,
		"title":        stdlib.TitleFunc,
		"tobool":       stdlib.MakeToFunc(cty.Bool),
		"tolist":       stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":        stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":     stdlib.MakeToFunc(cty.Number),
		"toset":        stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":     stdlib.MakeToFunc(cty.String),
		"trim":         stdlib.TrimFunc,
		"trimprefix":   stdlib.TrimPrefixFunc,
		"trimspace":    stdlib.TrimSpaceFunc,
		"trimsuffix":   stdlib.TrimSuffixFunc,
		"upper":        stdlib.UpperFunc,
		"values":       stdlib.ValuesFunc,
		"zipmap":       stdlib.ZipmapFunc,
	}
	// Every function keeps to the limits (limits.go); those whose work or
	// result grows with an argument's value check it before they run.
	pre := map[string]func([]cty.Value) error{
		"format":     formatWidths,
		"formatlist": formatWidths,
		"indent":     indentSize,
		"join":       joinSize,
		"jsondecode": jsonText,
		"parseint":   firstNumberText,
		"range":      rangeCount,
		"regexall":   regexCount,
		"replace":    replaceSize,
		"split":      splitCount,
		"tonumber":   firstNumberText,
	}
	for name, f := range fs {
		fs[name] = bounded(f, pre[name])
	}
	// can and try take their arguments as unevaluated expressions; what
	// they return is already a bounded value.
	fs["can"] = tryfunc.CanFunc
	fs["try"] = tryfunc.TryFunc
	return fs
}

// typeByPattern is regex or regexall (f) with its result type kept for
// each pattern: the type is the pattern's capture groups, and f compiles
// the pattern to learn it at every call, where validation only asks the
// type (the text it applies to is not known yet) and a run asks it at
// every evaluation. Calls with known arguments still go to f.
func typeByPattern(f function.Function) function.Function {
	// Patterns are the plan's own, or made at run time: at most so many
	// are kept.
	const keep = 256
	var mu sync.Mutex
	types := map[string]cty.Type{}
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		Type: func(args []cty.Value) (cty.Type, error) {
			if !args[0].IsKnown() || args[0].IsNull() {
				return f.ReturnTypeForValues(args)
			}
			pattern := args[0].AsString()
			mu.Lock()
			ty, ok := types[pattern]
			mu.Unlock()
			if ok {
				return ty, nil
			}
			ty, err := f.ReturnTypeForValues(args)
			if err != nil {
				return ty, err
			}
			mu.Lock()
			if len(types) < keep {
				types[pattern] = ty
			}
			mu.Unlock()
			return ty, nil
		},
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return f.Call(args)
		},
	})
}

// ShellQuote quotes s for a POSIX shell: the whole value in single quotes,
// each single quote inside written as '\”. The result is one word whatever
// s holds.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var shellquoteFunc = function.New(&function.Spec{
	Description: "Quotes a value for a POSIX shell as one word.",
	Params: []function.Parameter{
		{Name: "value", Type: cty.String},
	},
	Type:         function.StaticReturnType(cty.String),
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(ShellQuote(args[0].AsString())), nil
	},
})

// base64encodeFunc is Terraform's base64encode: standard encoding, with
// padding. Marks pass through (function.Call moves an argument's marks
// to the result), so base64encode(var.token) stays sensitive.
var base64encodeFunc = function.New(&function.Spec{
	Description: "Encodes a string's bytes as base64.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
	},
	Type:         function.StaticReturnType(cty.String),
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

// stringTest makes a function (string, other) -> bool from a Go predicate.
func stringTest(other string, f func(s, t string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{
			{Name: "str", Type: cty.String},
			{Name: other, Type: cty.String},
		},
		Type:         function.StaticReturnType(cty.Bool),
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// lengthFunc counts a collection's elements like stdlib's, and a string's
// characters too, as Terraform's length does: plans often measure output.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of elements of a collection or characters of a string.",
	Params: []function.Parameter{
		{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true},
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].Type() == cty.String {
			return stdlib.StrlenFunc.ReturnType([]cty.Type{cty.String})
		}
		return stdlib.LengthFunc.ReturnType([]cty.Type{args[0].Type()})
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.StrlenFunc.Call(args)
		}
		return stdlib.LengthFunc.Call(args)
	},
})
