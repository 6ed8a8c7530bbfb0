package steps

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/targets"
)

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
			p, err := NewProbe(ctx, targets.NewLocal(), ProbeSpec{Kind: "http", Name: "h", Attrs: map[string]cty.Value{"url": cty.StringVal(srv.URL)}, Reads: tc.reads})
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
