package schema

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Value is a config field type of a kind's own (a duration or a count, a
// list or a number): it says what cty type it takes, decodes itself from
// a value of it, and shows itself as docs do. Methods are on the pointer.
type Value interface {
	CtyType() cty.Type
	SetCty(v cty.Value) error
	Show() string
}

var (
	valueType    = reflect.TypeFor[Value]()
	durationType = reflect.TypeFor[time.Duration]()
	ctyValueType = reflect.TypeFor[cty.Value]()
)

// field is one tagged field of a config struct.
type field struct {
	index    []int // reflect's FieldByIndex: through embedded structs
	attr     Attr
	explicit bool // the default tag gives the shown default
	value    bool // a Value (on its pointer): it decodes itself
}

// fields reads the tags of a config struct type:
//
//	URL     string            `hcl:"url,required" doc:"URL to request"`
//	Method  string            `hcl:"method" doc:"HTTP method"`
//	Timeout time.Duration     `hcl:"timeout" doc:"how long one request may take"`
//	Env     map[string]string `hcl:"env" doc:"..." default:"the target's env"`
//	Repeat  int               `hcl:"repeat,const" doc:"..."`
//
// hcl names the attribute, with the options required and const; doc is
// its one-line doc; default, when given, is the default as docs show it
// (for a default the struct cannot hold, like "the target's workdir").
// Fields without an hcl tag are not attributes, but the fields of an
// embedded struct without one are, in their place: what every step has
// is one struct, embedded in each kind's.
func fields(t reflect.Type) ([]field, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if c, ok := fieldCache.Load(t); ok {
		return c.([]field), nil
	}
	fs, err := readFields(t)
	if err == nil {
		fieldCache.Store(t, fs)
	}
	return fs, err
}

// fieldCache holds each config struct type's fields, read once: validate
// decodes every step and probe of a plan, and reading the tags again each
// time was an eighth of its allocations. As encoding/json's cache, it
// only remembers what the types say; callers never change what it holds.
var fieldCache sync.Map // reflect.Type -> []field

func readFields(t reflect.Type) ([]field, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema: %s is not a struct", t)
	}
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				inner, err := fields(f.Type)
				if err != nil {
					return nil, err
				}
				for _, in := range inner {
					in.index = append([]int{i}, in.index...)
					out = append(out, in)
				}
			}
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		a := Attr{Name: name, Doc: f.Tag.Get("doc")}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "required":
				a.Required = true
			case "const":
				a.Const = true
			default:
				return nil, fmt.Errorf("schema: %s.%s: unknown hcl tag option %q", t, f.Name, o)
			}
		}
		typ, err := ctyType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("schema: %s.%s: %w", t, f.Name, err)
		}
		a.Type = typ
		def, explicit := f.Tag.Lookup("default")
		a.Default = def
		out = append(out, field{index: []int{i}, attr: a, explicit: explicit, value: reflect.PointerTo(f.Type).Implements(valueType)})
	}
	return out, nil
}

func ctyType(t reflect.Type) (cty.Type, error) {
	if reflect.PointerTo(t).Implements(valueType) {
		return reflect.New(t).Interface().(Value).CtyType(), nil
	}
	switch {
	case t == durationType:
		return cty.String, nil
	case t == ctyValueType:
		return cty.DynamicPseudoType, nil
	}
	switch t.Kind() {
	case reflect.String:
		return cty.String, nil
	case reflect.Bool:
		return cty.Bool, nil
	case reflect.Int, reflect.Int64, reflect.Float64:
		return cty.Number, nil
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return cty.Map(cty.String), nil
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return cty.List(cty.String), nil
		}
	}
	return cty.NilType, fmt.Errorf("no attribute type for Go type %s", t)
}

// Attrs derives the attributes of a config struct from its field tags
// (see fields), in field order. cfg holds the defaults: a field's value
// in cfg is the default docs show, unless its default tag says otherwise.
// A struct whose tags are wrong is a programming error: Attrs panics.
func Attrs(cfg any) []Attr {
	v := addressable(cfg)
	fs, err := fields(v.Type())
	if err != nil {
		panic(err)
	}
	out := make([]Attr, len(fs))
	for i, f := range fs {
		out[i] = f.attr
		if !f.explicit {
			out[i].Default = show(v.FieldByIndex(f.index))
		}
	}
	return out
}

// addressable is the struct cfg is or points to, addressable so that
// its fields' Show methods (on the pointer) can be called.
func addressable(cfg any) reflect.Value {
	v := reflect.Indirect(reflect.ValueOf(cfg))
	if !v.CanAddr() {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		v = c
	}
	return v
}

// show is a field's value as docs show a default: "" for an unset string
// or number, so that "no default" reads as such.
func show(v reflect.Value) string {
	if v.CanAddr() && v.Addr().Type().Implements(valueType) {
		return v.Addr().Interface().(Value).Show()
	}
	if v.Type() == durationType {
		return ShowDuration(time.Duration(v.Int()))
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64:
		if v.Int() == 0 {
			return ""
		}
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		if v.Float() == 0 {
			return ""
		}
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + " = " + strconv.Quote(v.MapIndex(reflect.ValueOf(k)).String())
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case reflect.Slice:
		if v.Len() == 0 {
			return "[]"
		}
	}
	return ""
}

// ShowDuration writes d as a plan would: 30s, 2m, 1m30s, 250ms; "" for 0.
func ShowDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// AttrError is a value an attribute cannot take.
type AttrError struct {
	Attr string
	Err  error
}

func (e *AttrError) Error() string {
	var inv *Invalid
	if errors.As(e.Err, &inv) && inv.Whole {
		return inv.Err.Error()
	}
	return e.Attr + " " + e.Err.Error()
}

// Invalid is an error whose diagnostic has a summary of its own
// ("Invalid duration") rather than the generic one, and whose text is
// the diagnostic's detail as it stands. Whole says the text names what
// it is about itself, so that AttrError does not put the attribute's
// name before it.
type Invalid struct {
	Summary string
	Err     error
	Whole   bool
}

func (e *Invalid) Error() string   { return e.Err.Error() }
func (e *Invalid) Unwrap() error   { return e.Err }
func (e *AttrError) Unwrap() error { return e.Err }

// Decode sets the fields of the struct cfg points to from vals, keyed by
// attribute name. An attribute that is absent or null keeps cfg's value,
// so cfg starts as the kind's defaults; one whose value is not yet known
// (validation evaluates what the run will observe as unknown) is skipped.
// Every attribute that cannot be decoded is an *AttrError in the joined
// error, in field order. Marks are dropped: keeping sensitive values out
// of sight is the caller's part.
func Decode(vals map[string]cty.Value, cfg any) error {
	rv := reflect.ValueOf(cfg)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("schema: Decode needs a pointer to a struct, not %T", cfg))
	}
	fs, err := fields(rv.Type())
	if err != nil {
		panic(err)
	}
	var errs []error
	for _, f := range fs {
		v, ok := vals[f.attr.Name]
		if !ok || v.IsNull() || !v.IsWhollyKnown() {
			continue
		}
		if v.Type().IsPrimitiveType() {
			v, _ = v.Unmark() // only its top can be marked: no walk
		} else {
			v, _ = v.UnmarkDeep()
		}
		if err := set(rv.Elem().FieldByIndex(f.index), f.value, v); err != nil {
			errs = append(errs, &AttrError{Attr: f.attr.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

func set(dst reflect.Value, value bool, v cty.Value) error {
	if value {
		return dst.Addr().Interface().(Value).SetCty(v)
	}
	if dst.Type() == ctyValueType {
		dst.Set(reflect.ValueOf(v))
		return nil
	}
	if dst.Type() == durationType {
		d, err := DurationOf(v)
		if err != nil {
			return err
		}
		dst.SetInt(int64(d))
		return nil
	}
	switch dst.Kind() {
	case reflect.String:
		s, err := convert.Convert(v, cty.String)
		if err != nil {
			return fmt.Errorf("must be a string, not %s", v.Type().FriendlyName())
		}
		dst.SetString(s.AsString())
	case reflect.Bool:
		b, err := convert.Convert(v, cty.Bool)
		if err != nil {
			return fmt.Errorf("must be true or false, not %s", v.Type().FriendlyName())
		}
		dst.SetBool(b.True())
	case reflect.Int, reflect.Int64:
		n, err := WholeOf(v)
		if err != nil {
			return err
		}
		dst.SetInt(n)
	case reflect.Float64:
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return fmt.Errorf("must be a number, not %s", v.Type().FriendlyName())
		}
		f, _ := n.AsBigFloat().Float64()
		dst.SetFloat(f)
	case reflect.Map:
		m, err := convert.Convert(v, cty.Map(cty.String))
		if err != nil {
			return fmt.Errorf("must be a map of strings, such as { NAME = \"value\" }")
		}
		out := reflect.MakeMapWithSize(dst.Type(), m.LengthInt())
		for k, e := range m.AsValueMap() {
			if e.IsNull() {
				return fmt.Errorf("must not hold null (at %q)", k)
			}
			out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(e.AsString()))
		}
		dst.Set(out)
	case reflect.Slice:
		l, err := convert.Convert(v, cty.List(cty.String))
		if err != nil {
			return fmt.Errorf("must be a list of strings")
		}
		out := reflect.MakeSlice(dst.Type(), 0, l.LengthInt())
		for _, e := range l.AsValueSlice() {
			if e.IsNull() {
				return fmt.Errorf("must not hold null")
			}
			out = reflect.Append(out, reflect.ValueOf(e.AsString()))
		}
		dst.Set(out)
	default:
		panic("schema: no decoder for " + dst.Type().String())
	}
	return nil
}

// DurationOf reads a duration written as a plan writes one: "30s",
// "2m", "1h30m", "250ms".
func DurationOf(v cty.Value) (time.Duration, error) {
	if v.Type() != cty.String {
		return 0, fmt.Errorf("must be a duration such as \"30s\" (a string with a unit), not %s", shown(v))
	}
	d, err := time.ParseDuration(v.AsString())
	if err != nil {
		return 0, fmt.Errorf("must be a duration such as \"30s\", \"2m\" or \"250ms\", not %q", v.AsString())
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, not %q", v.AsString())
	}
	return d, nil
}

// WholeOf reads a whole number (a string of digits will do, as HCL
// converts one).
func WholeOf(v cty.Value) (int64, error) {
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return 0, fmt.Errorf("must be a whole number, not %s", shown(v))
	}
	bf := n.AsBigFloat()
	if !bf.IsInt() {
		return 0, fmt.Errorf("must be a whole number, not %s", bf.Text('g', -1))
	}
	i, acc := bf.Int64()
	if acc != big.Exact {
		return 0, fmt.Errorf("must be a whole number in range, not %s", bf.Text('g', -1))
	}
	return i, nil
}

// shown is a value as an error names it: a number or bool as written,
// any other type by its name.
func shown(v cty.Value) string {
	switch v.Type() {
	case cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case cty.Bool:
		return strconv.FormatBool(v.True())
	case cty.String:
		return strconv.Quote(v.AsString())
	}
	return v.Type().FriendlyName()
}

// Checker is a config struct that checks what no attribute's type says
// alone: a range, attributes that exclude each other. Check runs after
// Decode, in validate and in the run; it returns *AttrError values
// (joined) for what an attribute is wrong about, plain errors otherwise.
// Attributes not yet known at validate time hold their defaults then, so
// a check must not fault a default.
type Checker interface {
	Check() error
}

// DecodeChecked is Decode followed by the config's Check, when it has
// one and decoding went well: what validate and the run both call.
func DecodeChecked(vals map[string]cty.Value, cfg any) error {
	if err := Decode(vals, cfg); err != nil {
		return err
	}
	if c, ok := cfg.(Checker); ok {
		return c.Check()
	}
	return nil
}

// Errors splits an error from Decode or Check into its parts.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	return []error{err}
}

// Shown is each attribute of a decoded config as docs show a default
// (Attrs), keyed by attribute name: what a record keeps of the config a
// step, probe or load really ran with, so that it can be set beside what
// explain said. Attributes whose value shows as "" are left out; values
// of type cty.Value show as JSON-like text.
func Shown(cfg any) map[string]string {
	v := addressable(cfg)
	fs, err := fields(v.Type())
	if err != nil {
		panic(err)
	}
	out := make(map[string]string, len(fs))
	for _, f := range fs {
		fv := v.FieldByIndex(f.index)
		s := show(fv)
		if fv.Type() == ctyValueType {
			s = showCty(fv.Interface().(cty.Value))
		}
		if s != "" {
			out[f.attr.Name] = s
		}
	}
	return out
}

func showCty(v cty.Value) string {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return ""
	}
	v, _ = v.UnmarkDeep()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return ""
	}
	return string(b)
}
