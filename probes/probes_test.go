package probes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// newProbe decodes attrs onto kind's defaults as the runner does and
// makes the probe on the local target.
func newProbe(t *testing.T, kind string, attrs map[string]cty.Value, s Spec) (Probe, error) {
	return newProbeOn(t, targets.NewLocal(), kind, attrs, s)
}

func newProbeOn(t *testing.T, tg targets.Target, kind string, attrs map[string]cty.Value, s Spec) (Probe, error) {
	t.Helper()
	k, ok := Lookup(kind)
	if !ok {
		t.Fatalf("no probe kind %q", kind)
	}
	cfg := k.Defaults()
	if err := schema.DecodeChecked(attrs, cfg); err != nil {
		return nil, err
	}
	return cfg.New(context.Background(), tg, s)
}

func TestHTTPProbeParsesJSONOnlyWhenRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ready": true}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		reads map[string]bool
		json  bool
	}{
		{"read whole", nil, true},
		{"json read", map[string]bool{"json": true}, true},
		{"only status read", map[string]bool{"status": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := newProbe(t, "http", map[string]cty.Value{"url": cty.StringVal(srv.URL)}, Spec{Reads: tc.reads})
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.GetAttr("status"); !got.Equals(cty.NumberIntVal(200)).True() {
				t.Errorf("status = %#v", got)
			}
			j := v.GetAttr("json")
			if tc.json {
				if j.IsNull() || !j.GetAttr("ready").True() {
					t.Errorf("json = %#v, want ready = true", j)
				}
			} else if !j.IsNull() {
				t.Errorf("json = %#v, want null (not read)", j)
			}
		})
	}
}

func TestLogProbeMakesOnlyWhatIsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, nil, 0o600)
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		reads       map[string]bool
		text, lines bool
	}{
		{"read whole", nil, true, true},
		{"text read", map[string]bool{"text": true}, true, false},
		{"only last_line read", map[string]bool{"last_line": true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newProbe(t, "log", map[string]cty.Value{"path": cty.StringVal(path)}, Spec{Reads: tc.reads})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintln(f, "starting")
			fmt.Fprintln(f, "ready")
			f.Close()
			v, err := p.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.GetAttr("last_line").AsString(); got != "ready" {
				t.Errorf("last_line = %q", got)
			}
			if text := v.GetAttr("text"); text.IsNull() == tc.text || (tc.text && text.AsString() != "starting\nready\n") {
				t.Errorf("text = %#v", text)
			}
			if lines := v.GetAttr("lines"); lines.IsNull() == tc.lines || (tc.lines && lines.LengthInt() != 2) {
				t.Errorf("lines = %#v", lines)
			}
			// Nothing written since: the same value, not made again.
			if again, _ := p.Observe(ctx); !again.RawEquals(v) {
				t.Errorf("second observation %#v, want %#v", again, v)
			}
		})
	}
}

// An http probe reports the URL's own answer (a 302 and where it points)
// unless it follows redirects, and then the last answer's; probes sharing
// a target's pool share its connections.
func TestHTTPProbeReportsTheFirstAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.Redirect(w, r, "/login", http.StatusFound)
		case "/login":
			http.Redirect(w, r, "/login/", http.StatusMovedPermanently)
		default:
			w.Write([]byte("sign in"))
		}
	}))
	defer srv.Close()
	pools := NewHTTPClients()
	defer pools.CloseIdle()
	local := targets.NewLocal()
	for _, tc := range []struct {
		follow   bool
		status   int64
		location string
		body     string
	}{
		{false, 302, "/login", ""},
		{true, 200, "", "sign in"},
	} {
		t.Run(fmt.Sprintf("follow_redirects=%v", tc.follow), func(t *testing.T) {
			ctx := context.Background()
			p, err := newProbeOn(t, local, "http", map[string]cty.Value{
				"url": cty.StringVal(srv.URL + "/"), "follow_redirects": cty.BoolVal(tc.follow),
			}, Spec{HTTP: pools})
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.GetAttr("status"); !got.Equals(cty.NumberIntVal(tc.status)).True() {
				t.Errorf("status = %#v, want %d", got, tc.status)
			}
			if got := v.GetAttr("location").AsString(); got != tc.location {
				t.Errorf("location = %q, want %q", got, tc.location)
			}
			if got := v.GetAttr("body").AsString(); tc.body != "" && got != tc.body {
				t.Errorf("body = %q, want %q", got, tc.body)
			}
		})
	}
	if n := len(pools.m); n != 1 {
		t.Errorf("%d pools for one target", n)
	}
}
