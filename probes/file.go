package probes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// File is the file probe: it looks at a file on the target, reading only
// what the step reads of it.
type File struct {
	Path string `hcl:"path,required" doc:"file path"`
}

// fileDefaults is the file probe's config before its block is read.
func fileDefaults() *File { return &File{} }

func fileKind() Kind {
	str := cty.String
	return Kind{
		Name: "file", Doc: "looks at a file on the target",
		Defaults: func() Config { return fileDefaults() },
		Outputs: []schema.Output{
			{Name: "exists", Type: cty.Bool, Doc: "whether the file exists"},
			{Name: "size", Type: cty.Number, Doc: "size in bytes"},
			{Name: "content", Type: str, Doc: "its content (up to 1 MiB)"},
			{Name: "sha256", Type: str, Doc: "hex SHA-256 of the content"},
		},
	}
}

func (c *File) Check() error { return nil }

// Summary: the path is shown as written.
func (c *File) Summary() string { return "" }

// maxFileContent bounds what a file probe reads into content.
const maxFileContent = 1 << 20

func (c *File) New(_ context.Context, t targets.Target, s Spec) (Probe, error) {
	if c.Path == "" {
		return nil, fmt.Errorf("a file probe needs path")
	}
	return &fileProbe{t: t, path: c.Path, content: s.reads("content"), sum: s.reads("sha256")}, nil
}

type fileProbe struct {
	t    targets.Target
	path string
	// content and sum say whether the step reads them: a step that only
	// asks whether a file exists, or its size, does not read the file.
	content, sum bool
}

func (p *fileProbe) Observe(ctx context.Context) (cty.Value, error) {
	content, sum := cty.NullVal(cty.String), cty.NullVal(cty.String)
	var fi targets.FileInfo
	var err error
	switch {
	case p.content:
		var data []byte
		data, fi, err = p.t.ReadAt(ctx, p.path, 0, maxFileContent)
		if err != nil || !fi.Exists {
			break
		}
		content = cty.StringVal(string(data))
		if int64(len(data)) == fi.Size {
			h := sha256.Sum256(data)
			sum = cty.StringVal(hex.EncodeToString(h[:]))
		}
	case p.sum:
		var hexSum string
		hexSum, fi, err = p.t.SHA256(ctx, p.path)
		if err == nil && fi.Exists {
			sum = cty.StringVal(hexSum)
		}
	default:
		fi, err = p.t.Stat(ctx, p.path)
	}
	if err != nil {
		return cty.NilVal, err
	}
	if !fi.Exists {
		return cty.ObjectVal(map[string]cty.Value{
			"exists":  cty.False,
			"size":    cty.NullVal(cty.Number),
			"content": cty.NullVal(cty.String),
			"sha256":  cty.NullVal(cty.String),
		}), nil
	}
	return cty.ObjectVal(map[string]cty.Value{
		"exists":  cty.True,
		"size":    cty.NumberVal(new(big.Float).SetInt64(fi.Size)),
		"content": content,
		"sha256":  sum,
	}), nil
}
