package plans_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"lockstep/plans"
)

// Every function keeps a sensitive argument's mark on its result, and Show
// redacts by the marks: the parts that are sensitive, and nothing else.
func TestShowFollowsMarks(t *testing.T) {
	p, diags := plans.Parse("p.hcl", []byte(`
plan "p" {}
variable "token" {
  type      = string
  sensitive = true
}
variable "pin" {
  type      = number
  sensitive = true
}
variable "user" {
  type = string
}
locals {
  auth = "Bearer ${var.token}"
  on   = true
}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, diags := p.Resolve(plans.Inputs{Vars: []string{"token=s3cr3t-Tok", "pin=1593", "user=ci"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tests := []struct {
		expr   string
		shown  string
		hidden []string
	}{
		{`"login ${var.user}"`, "login ci", nil},
		{`"curl -H ${shellquote("Authorization: Bearer ${var.token}")} x"`, "curl -H 'Authorization: Bearer (sensitive)' x", []string{"s3cr3t-Tok"}},
		{`"a ${upper(var.token)} b"`, "a (sensitive) b", []string{"S3CR3T-TOK"}},
		{`"${lower(var.token)}"`, "(sensitive)", []string{"s3cr3t-tok"}},
		{`replace(var.token, "-", "")`, "(sensitive)", []string{"s3cr3tTok"}},
		{`"x${substr(var.token, 0, 3)}"`, "x(sensitive)", []string{"s3c"}},
		{`format("%s/%s", var.user, var.token)`, "ci/(sensitive)", []string{"s3cr3t-Tok"}},
		{`format("%04d", var.pin)`, "(sensitive)", []string{"1593"}},
		{`base64encode(var.token)`, "(sensitive)", []string{"czNjcjN0LVRvaw=="}},
		{`jsonencode({ t = var.token, u = var.user })`, "(sensitive)", []string{`{"t":"s3cr3t-Tok","u":"ci"}`}},
		{`"port ${var.pin + 1}"`, "port (sensitive)", []string{"1594"}},
		{`"${local.auth} ok"`, "(sensitive) ok", []string{"Bearer s3cr3t-Tok"}},
		{`local.on ? "t=${var.token}" : "none"`, "t=(sensitive)", []string{"s3cr3t-Tok"}},
		{`var.token == "x" ? "a" : "b"`, "(sensitive)", []string{"b"}},
		{`trimspace(" ${var.token} ")`, "(sensitive)", []string{"s3cr3t-Tok"}},
		{`join(",", [var.token, "b"])`, "(sensitive)", []string{"s3cr3t-Tok,b"}},
		{`length(var.token)`, "(sensitive)", []string{"10"}},
		{`title(var.token)`, "(sensitive)", []string{"S3cr3t-Tok"}},
	}
	ctx := s.EvalContext(nil)
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte(tt.expr), "e.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, diags := expr.Value(ctx)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if want := tt.hidden != nil; plans.IsSensitive(v) != want {
				t.Errorf("sensitive = %v, want %v", plans.IsSensitive(v), want)
			}
			sh, diags := plans.Show(expr, ctx)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if sh.Text != tt.shown {
				t.Errorf("shown %q, want %q", sh.Text, tt.shown)
			}
			if strings.Join(sh.Hidden, "|") != strings.Join(tt.hidden, "|") {
				t.Errorf("hidden %q, want %q", sh.Hidden, tt.hidden)
			}
			for _, secret := range []string{"s3cr3t", "S3CR3T", "czNj", "1593"} {
				if strings.Contains(sh.Text, secret) {
					t.Errorf("shown %q holds %q", sh.Text, secret)
				}
			}
		})
	}
	if got := strings.Join(s.Secrets(), ","); !strings.Contains(got, "s3cr3t-Tok") || !strings.Contains(got, "1593") || !strings.Contains(got, "Bearer s3cr3t-Tok") || strings.Contains(got, "ci") {
		t.Errorf("Secrets() = %q", got)
	}
}
