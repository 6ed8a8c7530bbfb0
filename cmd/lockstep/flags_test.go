package main

import (
	"errors"
	"reflect"
	"testing"

	"lockstep/views"
)

func TestParseExplainFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    explainFlags
		wantErr string
	}{
		{args: []string{"p.hcl"}, want: explainFlags{Plan: "p.hcl", Format: views.Text}},
		{args: []string{"p.hcl", "--format", "markdown"}, want: explainFlags{Plan: "p.hcl", Format: views.Markdown}},
		{args: []string{"-format=markdown", "p.hcl"}, want: explainFlags{Plan: "p.hcl", Format: views.Markdown}},
		{
			args: []string{"-var", "a=1", "p.hcl", "--var=b=2", "-var-file", "x.hcl", "-var", "a=3"},
			want: explainFlags{Plan: "p.hcl", Format: views.Text},
		},
		{args: []string{"--", "-odd-name.hcl"}, want: explainFlags{Plan: "-odd-name.hcl", Format: views.Text}},
		{args: []string{"p.hcl", "--format", "html"}, wantErr: `unknown format "html": use text or markdown`},
		{args: []string{"p.hcl", "--format"}, wantErr: "flag -format needs a value"},
		{args: []string{"p.hcl", "--nope"}, wantErr: "unknown flag -nope"},
		{args: []string{}, wantErr: "explain needs a plan file"},
	}
	for _, tt := range tests {
		got, err := parseExplainFlags(tt.args)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got.Plan != tt.want.Plan || got.Format != tt.want.Format {
			t.Errorf("%q: got %+v, want %+v", tt.args, got, tt.want)
		}
	}
	got, _ := parseExplainFlags([]string{"-var", "a=1", "p.hcl", "--var=b=2", "-var-file", "x.hcl", "-var", "a=3"})
	if want := []string{"a=1", "b=2", "a=3"}; !reflect.DeepEqual(got.Inputs.Vars, want) {
		t.Errorf("vars %q, want %q in command-line order", got.Inputs.Vars, want)
	}
	if want := []string{"x.hcl"}; !reflect.DeepEqual(got.Inputs.VarFiles, want) {
		t.Errorf("var files %q, want %q", got.Inputs.VarFiles, want)
	}
	if _, err := parseExplainFlags([]string{"--help"}); !errors.Is(err, errHelp) {
		t.Errorf("--help gave %v, want errHelp", err)
	}
}

func TestParseFmtFlags(t *testing.T) {
	got, err := parseFmtFlags([]string{"a", "-check", "b", "--diff"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmtFlags{Paths: []string{"a", "b"}, Check: true, Diff: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got, _ = parseFmtFlags(nil)
	if !reflect.DeepEqual(got.Paths, []string{"."}) {
		t.Errorf("default paths %q, want the current directory", got.Paths)
	}
}
