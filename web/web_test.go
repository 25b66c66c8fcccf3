package web

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func newHandler(t *testing.T, cfg Config) *handler {
	t.Helper()
	h, err := Handler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h.(*handler)
}

func get(t *testing.T, h http.Handler, path string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

var htmlLang = regexp.MustCompile(`<html lang="([a-z]+)">`)

func TestLanguage(t *testing.T) {
	h := newHandler(t, Config{})
	tests := []struct {
		name       string
		path       string
		header     http.Header
		want       Lang
		wantCookie bool
	}{
		{"nothing says: English", "/", nil, EN, false},
		{"Japanese browser", "/", http.Header{"Accept-Language": {"ja-JP,ja;q=0.9"}}, JA, false},
		{"Japanese preferred over English", "/", http.Header{"Accept-Language": {"ja,en-US;q=0.8,en;q=0.7"}}, JA, false},
		{"English preferred over Japanese", "/", http.Header{"Accept-Language": {"en-US,en;q=0.9,ja;q=0.8"}}, EN, false},
		{"q-values beat order", "/", http.Header{"Accept-Language": {"en;q=0.3, ja;q=0.9"}}, JA, false},
		{"unsupported languages only", "/", http.Header{"Accept-Language": {"fr-FR,de;q=0.9"}}, EN, false},
		{"Japanese after unsupported ones", "/", http.Header{"Accept-Language": {"fr,ja;q=0.5"}}, JA, false},
		{"q=0 means no", "/", http.Header{"Accept-Language": {"ja;q=0,en;q=0.1"}}, EN, false},
		{"cookie beats the browser", "/", http.Header{"Accept-Language": {"en"}, "Cookie": {LangCookie + "=ja"}}, JA, false},
		{"bad cookie is ignored", "/", http.Header{"Accept-Language": {"ja"}, "Cookie": {LangCookie + "=xx"}}, JA, false},
		{"query beats the cookie and sets it", "/?lang=en", http.Header{"Cookie": {LangCookie + "=ja"}, "Accept-Language": {"ja"}}, EN, true},
		{"query ja", "/?lang=ja", nil, JA, true},
		{"unknown query is ignored", "/?lang=fr", http.Header{"Accept-Language": {"ja"}}, JA, false},
		{"index.html", "/index.html?lang=ja", nil, JA, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, h, tc.path, tc.header)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			m := htmlLang.FindSubmatch(body)
			if m == nil || Lang(m[1]) != tc.want {
				t.Errorf("page language = %s, want %s", m, tc.want)
			}
			if got := res.Header.Get("Content-Language"); got != string(tc.want) {
				t.Errorf("Content-Language = %q, want %q", got, tc.want)
			}
			if !bytes.Contains(body, []byte(T(tc.want, "app.tagline"))) {
				t.Errorf("the page does not speak %s", tc.want)
			}
			var cookie *http.Cookie
			for _, c := range res.Cookies() {
				if c.Name == LangCookie {
					cookie = c
				}
			}
			if tc.wantCookie != (cookie != nil) {
				t.Fatalf("language cookie set = %v, want %v", cookie != nil, tc.wantCookie)
			}
			if cookie != nil && (cookie.Value != string(tc.want) || cookie.Path != "/") {
				t.Errorf("cookie = %+v", cookie)
			}
			if v := res.Header.Get("Vary"); !strings.Contains(v, "Accept-Language") || !strings.Contains(v, "Cookie") {
				t.Errorf("Vary = %q: caches must keep languages apart", v)
			}
		})
	}
}

func TestDefaultLang(t *testing.T) {
	h := newHandler(t, Config{DefaultLang: JA})
	res := get(t, h, "/", nil)
	if got := res.Header.Get("Content-Language"); got != "ja" {
		t.Errorf("Content-Language = %q with DefaultLang ja", got)
	}
	if _, err := Handler(Config{DefaultLang: "fr"}); err == nil {
		t.Error("Handler accepted an unknown default language")
	}
}

func TestPageHeaders(t *testing.T) {
	h := newHandler(t, Config{})
	res := get(t, h, "/", nil)
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "connect-src 'self'", "script-src 'self'", "style-src 'self'", "font-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, d)
		}
	}
}

func TestStaticAssets(t *testing.T) {
	h := newHandler(t, Config{})
	base := h.assets.base
	cases := map[string]string{
		"style.css":     "text/css; charset=utf-8",
		"js/app.js":     "text/javascript; charset=utf-8",
		"js/store.js":   "text/javascript; charset=utf-8",
		"icon.svg":      "image/svg+xml",
		"js/flow.js":    "text/javascript; charset=utf-8",
		"js/diagram.js": "text/javascript; charset=utf-8",
	}
	for name, ctype := range cases {
		res := get(t, h, base+name, nil)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", name, res.StatusCode)
			continue
		}
		if got := res.Header.Get("Content-Type"); got != ctype {
			t.Errorf("%s: Content-Type %q, want %q", name, got, ctype)
		}
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", name, got)
		}
		etag := res.Header.Get("ETag")
		if etag == "" {
			t.Errorf("%s: no ETag", name)
			continue
		}
		again := get(t, h, base+name, http.Header{"If-None-Match": {etag}})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: status %d, want 304", name, again.StatusCode)
		}
	}
	// A page from an older build still gets the file, but must revalidate.
	res := get(t, h, "/static/0000/style.css", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: status %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	icon := get(t, h, "/favicon.ico", nil)
	if icon.StatusCode != http.StatusOK || icon.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("/favicon.ico: status %d, %s", icon.StatusCode, icon.Header.Get("Content-Type"))
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	h := newHandler(t, Config{})
	for _, path := range []string{"/nope", "/static/", "/static/" + h.assets.version + "/nope.js", "/static/" + h.assets.version + "/../web.go", "/static/x"} {
		res := get(t, h, path, nil)
		var body struct{ Error string }
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusNotFound || body.Error == "" {
			t.Errorf("GET %s: status %d, body error %q (%v); want 404 with a JSON error", path, res.StatusCode, body.Error, err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	req = httptest.NewRequest(http.MethodHead, "/", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD /: status %d, %d body bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
}

// TestGolden compares the rendered page with testdata/page.<lang>.html.
// After a deliberate change: go test ./web -run TestGolden -update
func TestGolden(t *testing.T) {
	for _, l := range Langs() {
		var b bytes.Buffer
		if err := Page(pageData(l, "/static/v/")).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		// One tag per line keeps the golden diffable.
		got := strings.ReplaceAll(b.String(), "><", ">\n<")
		path := filepath.Join("testdata", "page."+string(l)+".html")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./web -run TestGolden -update)", err)
		}
		if got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := 0; i < len(gl) || i < len(wl); i++ {
				var g, w string
				if i < len(gl) {
					g = gl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				if g != w {
					t.Errorf("%s differs at line %d:\n got: %.300s\nwant: %.300s\n(if the change is intended: go test ./web -run TestGolden -update)", path, i+1, g, w)
					break
				}
			}
		}
	}
}

// TestTestIDs makes sure the hooks the browser tests use stay on the page.
func TestTestIDs(t *testing.T) {
	h := newHandler(t, Config{})
	body, _ := io.ReadAll(get(t, h, "/", nil).Body)
	for _, id := range []string{
		"conn-status", "svc-strip", "svc-stuck", "svc-step-count", "send-request", "diagram",
		"trace-result", "trace-caption", "node-timeline", "node-taint", "node-select", "controllers",
		"nodes", "services", "instances", "lbs", "routes", "calls", "launch-instance",
		"fault-deny", "fault-throttle", "fault-latency", "stepmode-switch", "stepmode-next",
		"presenter-toggle", "shortcuts", "action-error", "lang-switch",
		"ex-panel", "ex-toggle", "ex-list", "ex-detail", "ex-check", "ex-reset", "ex-status", "ex-steps", "ex-quiz",
		"console", "console-input", "console-run", "console-output", "console-clear",
	} {
		if !bytes.Contains(body, []byte(`data-testid="`+id+`"`)) {
			t.Errorf("the page has no data-testid=%q", id)
		}
	}
}
