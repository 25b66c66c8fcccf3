package httpguard

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// A null body and keys encoding/json would take for one field are refused,
// and dst is left as it was.
func TestDecodeJSONStrict(t *testing.T) {
	type body struct {
		QPS     float64 `json:"qps"`
		Kind    string  `json:"kind"`
		Enabled *bool   `json:"enabled"`
	}
	for _, tc := range []struct {
		name, body string
		opts       DecodeOptions
		want       int // 0: accepted
		msg        string
	}{
		{"null", `null`, DecodeOptions{}, 400, "the body is null"},
		{"null optional", `null`, DecodeOptions{Optional: true}, 400, "the body is null"},
		{"null spaced", " \n null \t", DecodeOptions{}, 400, "the body is null"},
		{"null field", `{"enabled":null}`, DecodeOptions{}, 0, ""},
		{"long s", `{"qps":1,"qpſ":5}`, DecodeOptions{}, 400, `key "qpſ" appears twice`},
		{"long s first", `{"qpſ":5,"qps":1}`, DecodeOptions{}, 400, `key "qps" appears twice`},
		{"ascii case", `{"kind":"a","Kind":"b"}`, DecodeOptions{}, 400, `key "Kind" appears twice`},
		{"kelvin K", `{"kind":"a","\u212aind":"b"}`, DecodeOptions{}, 400, "appears twice"},
		{"escaped", `{"qps":1,"\u0051PS":2}`, DecodeOptions{}, 400, `key "QPS" appears twice`},
		{"unknown keys case-fold", `{"x":1,"X":2}`, DecodeOptions{AllowUnknownFields: true}, 400, "appears twice"},
		{"long s alone", `{"qpſ":5}`, DecodeOptions{}, 0, ""},
		{"distinct", `{"qps":1,"kind":"a"}`, DecodeOptions{}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			b := body{QPS: 42}
			e := DecodeJSON(httptest.NewRecorder(), r, &b, tc.opts)
			switch {
			case tc.want == 0 && e != nil:
				t.Fatalf("refused: %d %s", e.Code, e.Msg)
			case tc.want != 0 && (e == nil || e.Code != tc.want || !strings.Contains(e.Msg, tc.msg)):
				t.Fatalf("got %+v, want %d %q", e, tc.want, tc.msg)
			case tc.want != 0 && b.QPS != 42:
				t.Fatalf("a refused body changed dst: %+v", b)
			}
		})
	}
}

// foldName is encoding/json's matching: two keys fold alike exactly when
// encoding/json would fill the same field from both.
func TestFoldNameMatchesEncodingJSON(t *testing.T) {
	type one struct {
		F int `json:"field"`
	}
	for _, k := range []string{"field", "FIELD", "Field", "fıeld", "fİeld", "ſield", "fieLd", "\u212aield", "fie\u212ald", "fielD\u00a0", "feld"} {
		var v one
		matched := json.Unmarshal([]byte(`{"`+k+`":1}`), &v) == nil && v.F == 1
		if same := foldName(k) == foldName("field"); same != matched {
			t.Errorf("%q: encoding/json matched %t, foldName says %t", k, matched, same)
		}
	}
}
