package httpguard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	g, err := New(Config{Listen: "lab.internal:8080", PublicURL: "https://class.example.com/", AllowedHosts: []string{"ccmlab-alice.ns.svc", "10.1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	wild, err := New(Config{Listen: "0.0.0.0:8080"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    *Guard
		host string
		want bool
	}{
		{g, "localhost", true},
		{g, "LOCALHOST:8080", true},
		{g, "127.0.0.1:1", true},
		{g, "127.9.9.9", true},
		{g, "[::1]:8080", true},
		{g, "lab.internal:8080", true},
		{g, "class.example.com", true},
		{g, "class.example.com.:443", true},
		{g, "ccmlab-alice.ns.svc:80", true},
		{g, "10.1.2.3:8080", true},
		{g, "10.1.2.4:8080", false},
		{g, "evil.example:8080", false},
		{g, "localhost.evil.example", false},
		{g, "evil.localhost", false},
		{g, "", false},
		{wild, "192.168.1.20:8080", true},
		{wild, "[fe80::1]:8080", true},
		{wild, "evil.example:8080", false},
	} {
		if got := tc.g.HostAllowed(tc.host); got != tc.want {
			t.Errorf("HostAllowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	for _, bad := range []string{"*.example.com", "host:80", "a b", "", "-x.example", "http://x"} {
		if _, err := New(Config{AllowedHosts: []string{bad}}); err == nil {
			t.Errorf("--allow-host %q was accepted", bad)
		}
	}
}

func TestHandler(t *testing.T) {
	g := Loopback()
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, tc := range []struct {
		name, method, target string
		header               map[string]string
		want                 int
		msg                  string
	}{
		{"loopback", "PUT", "http://127.0.0.1:8080/x", nil, 204, ""},
		{"rebound name", "PUT", "http://evil.example:8080/x", map[string]string{"Origin": "http://evil.example:8080"}, 421, "is not this server's"},
		{"rebound name GET", "GET", "http://evil.example:8080/", nil, 421, "is not this server's"},
		{"cross-origin", "POST", "http://localhost:8080/x", map[string]string{"Origin": "http://evil.example"}, 403, "cross-origin"},
		{"cross-site fetch", "DELETE", "http://localhost:8080/x", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross-origin"},
		{"same-origin", "POST", "http://localhost:8080/x", map[string]string{"Origin": "http://localhost:8080"}, 204, ""},
		{"cross-origin websocket", "GET", "http://localhost:8080/ws", map[string]string{"Upgrade": "websocket", "Origin": "http://evil.example"}, 403, "cross-origin"},
		{"cross-site websocket", "GET", "http://localhost:8080/ws", map[string]string{"Upgrade": "websocket", "Sec-Fetch-Site": "cross-site"}, 403, "cross-origin"},
		{"same-origin websocket", "GET", "http://localhost:8080/ws", map[string]string{"Upgrade": "websocket", "Sec-Fetch-Site": "same-origin"}, 204, ""},
		{"cross-origin GET", "GET", "http://localhost:8080/x", map[string]string{"Origin": "http://evil.example"}, 204, ""},
		{"repeated param", "GET", "http://localhost/x?since=1&since=x", nil, 400, "since\\\" is given 2 times"},
		{"malformed query", "GET", "http://localhost/x?a=%zz", nil, 400, "malformed query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.msg) {
				t.Fatalf("%d %s, want %d %q", rec.Code, rec.Body, tc.want, tc.msg)
			}
			if tc.want >= 400 {
				var e map[string]string
				if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
					t.Fatalf("not a JSON error: %s", rec.Body)
				}
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	type body struct {
		A *bool  `json:"a"`
		B []int  `json:"b"`
		C string `json:"c"`
		D *struct {
			E int `json:"e"`
		} `json:"d"`
	}
	big := `{"c":"` + strings.Repeat("x", MaxBody) + `"}`
	for _, tc := range []struct {
		name, ct, body string
		opts           DecodeOptions
		want           int
		msg            string
	}{
		{"ok", "application/json", `{"a":true,"b":[1,2],"d":{"e":1}}`, DecodeOptions{}, 0, ""},
		{"charset", "application/json; charset=UTF-8", `{"a":true}`, DecodeOptions{}, 0, ""},
		{"jsonp", "application/jsonp", `{"a":true}`, DecodeOptions{}, 415, "application/json"},
		{"json-seq", "application/json-seq", `{"a":true}`, DecodeOptions{}, 415, "application/json"},
		{"text", "text/plain", `{"a":true}`, DecodeOptions{}, 415, "application/json"},
		{"form", "application/x-www-form-urlencoded", `{"a":true}`, DecodeOptions{}, 415, "application/json"},
		{"no content type", "", `{"a":true}`, DecodeOptions{}, 415, "Content-Type: application/json"},
		{"other charset", "application/json; charset=latin1", `{"a":true}`, DecodeOptions{}, 415, "charset"},
		{"other param", "application/json; x=1", `{"a":true}`, DecodeOptions{}, 415, "charset"},
		{"dup key", "application/json", `{"a":true,"a":false}`, DecodeOptions{}, 400, `key "a" appears twice`},
		{"nested dup key", "application/json", `{"d":{"e":1,"e":2}}`, DecodeOptions{}, 400, `key "e" appears twice`},
		{"dup after nested", "application/json", `{"d":{"e":1},"d":null}`, DecodeOptions{}, 400, `key "d" appears twice`},
		{"case-folded dup key", "application/json", `{"a":true,"A":false}`, DecodeOptions{}, 400, `key "A" appears twice`},
		{"same key in two objects", "application/json", `{"b":[],"d":{"e":1}}`, DecodeOptions{}, 0, ""},
		{"trailing", "application/json", `{"a":true} x`, DecodeOptions{}, 400, "malformed JSON"},
		{"two values", "application/json", `{"a":true}{}`, DecodeOptions{}, 400, "more than one value"},
		{"unknown", "application/json", `{"z":1}`, DecodeOptions{}, 400, `unknown field "z"`},
		{"unknown allowed", "application/json", `{"z":1}`, DecodeOptions{AllowUnknownFields: true}, 0, ""},
		{"empty", "application/json", ``, DecodeOptions{}, 400, "required"},
		{"empty optional", "", ``, DecodeOptions{Optional: true}, 0, ""},
		{"too big", "application/json", big, DecodeOptions{}, 413, "larger than"},
		{"truncated", "application/json", `{"a":`, DecodeOptions{}, 400, "malformed JSON"},
		{"wrong type", "application/json", `{"a":"yes"}`, DecodeOptions{}, 400, `field "a" must be bool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			var b body
			e := DecodeJSON(httptest.NewRecorder(), r, &b, tc.opts)
			switch {
			case tc.want == 0 && e != nil:
				t.Fatalf("refused: %d %s", e.Code, e.Msg)
			case tc.want != 0 && (e == nil || e.Code != tc.want || !strings.Contains(e.Msg, tc.msg)):
				t.Fatalf("got %+v, want %d %q", e, tc.want, tc.msg)
			}
		})
	}
}

// TestWriteError: every refusal is {"error": msg} with its status, as
// JSON that no browser sniffs or caches, and reads back as ErrorBody.
func TestWriteError(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		msg  string
		want string
	}{
		{"plain", http.StatusBadRequest, "bad input", `{"error":"bad input"}` + "\n"},
		{"quotes and markup", http.StatusNotFound, `no exercise "<x>"`, `{"error":"no exercise \"\u003cx\u003e\""}` + "\n"},
		{"empty message", http.StatusInternalServerError, "", `{"error":""}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tc.code, tc.msg)
			if rec.Code != tc.code || rec.Body.String() != tc.want {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body.String(), tc.code, tc.want)
			}
			for k, v := range map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			var b ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error != tc.msg {
				t.Errorf("reads back as %+v (%v), want %q", b, err, tc.msg)
			}
		})
	}
}
