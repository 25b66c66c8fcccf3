package web

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The page and everything it loads, without a cache, must stay under this.
const maxPageWeight = 300 << 10

var (
	refAttr   = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	cssURL    = regexp.MustCompile(`url\(\s*['"]?([^'")]+)`)
	jsImport  = regexp.MustCompile(`(?:import|from)\s*\(?\s*["']([^"']+)["']`)
	anyURL    = regexp.MustCompile(`(?i)\b(?:https?|wss?|ftp):(?:\\?/){2}[^\s"'<>)]*|["'(=]\s*//[a-z0-9][^\s"'<>)]*`)
	svgNSOnly = "http://www.w3.org/2000/svg"
)

// loaded fetches the page and follows every reference it makes (HTML
// src/href, CSS url(), JS imports) on the handler, returning each body.
func loaded(t *testing.T, h *handler) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var visit func(path, from string)
	visit = func(path, from string) {
		if _, seen := out[path]; seen {
			return
		}
		res := get(t, h, path, nil)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s (referenced by %s): status %d", path, from, res.StatusCode)
			return
		}
		out[path] = body
		var refs [][]string
		switch {
		case strings.HasSuffix(path, ".css"):
			refs = cssURL.FindAllStringSubmatch(string(body), -1)
		case strings.HasSuffix(path, ".js"):
			refs = jsImport.FindAllStringSubmatch(string(body), -1)
		case strings.HasSuffix(path, ".svg"):
		default:
			refs = refAttr.FindAllStringSubmatch(string(body), -1)
		}
		for _, m := range refs {
			ref := m[1]
			switch {
			case strings.HasPrefix(ref, "#"), strings.HasPrefix(ref, "?"):
				continue // same page
			case strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"):
			case !strings.Contains(ref, ":") && !strings.HasPrefix(ref, "//"):
				// Relative ("./x.js", "static/..."): the page names its
				// assets relative to itself so it works behind a prefix.
				ref = path[:strings.LastIndex(path, "/")+1] + strings.TrimPrefix(ref, "./")
			default:
				t.Errorf("%s refers to %q, which is not on the lab's own origin", path, ref)
				continue
			}
			visit(ref, path)
		}
	}
	visit("/", "the browser")
	return out
}

func TestPageWeight(t *testing.T) {
	h := newHandler(t, Config{})
	total := 0
	pages := loaded(t, h)
	for path, body := range pages {
		total += len(body)
		t.Logf("%7d  %s", len(body), path)
	}
	// Every asset should be something the page loads; a file nobody
	// loads is dead weight in the binary.
	for _, p := range h.assetPaths() {
		if _, ok := pages[p]; !ok {
			t.Errorf("%s is embedded but the page never loads it", p)
		}
	}
	t.Logf("%7d  total (limit %d)", total, maxPageWeight)
	if total >= maxPageWeight {
		t.Errorf("the page weighs %d bytes without a cache, over the %d limit", total, maxPageWeight)
	}
}

// TestNoExternalOrigins: nothing the page loads names another origin: no
// CDN, no web font, no analytics. The only absolute URL allowed is the SVG
// namespace, which names XML and is never fetched.
func TestNoExternalOrigins(t *testing.T) {
	h := newHandler(t, Config{})
	for _, l := range Langs() {
		body, _ := io.ReadAll(get(t, h, "/?lang="+string(l), nil).Body)
		checkNoURLs(t, "/?lang="+string(l), string(body))
	}
	for path, body := range loaded(t, h) {
		if path != "/" {
			checkNoURLs(t, path, string(body))
		}
	}
}

func checkNoURLs(t *testing.T, path, body string) {
	t.Helper()
	for _, u := range anyURL.FindAllString(body, -1) {
		if strings.Trim(u, `"'(= `) == svgNSOnly {
			continue
		}
		t.Errorf("%s names an external URL: %s", path, u)
	}
}

func TestCheckNoURLsCatchesThem(t *testing.T) {
	for _, bad := range []string{
		`<link href="https://cdn.example.com/x.css">`,
		`@import url(//fonts.example.com/a.css);`,
		`import x from "https://esm.sh/x";`,
		`new WebSocket("wss://elsewhere.example/ws")`,
		`<script src='//cdn.example.com/x.js'>`,
	} {
		if len(anyURL.FindAllString(bad, -1)) == 0 {
			t.Errorf("the external-URL check misses %s", bad)
		}
	}
	if got := anyURL.FindAllString(`const SVG_NS = "`+svgNSOnly+`";`, -1); len(got) != 1 || strings.Trim(got[0], `"'(= `) != svgNSOnly {
		t.Errorf("SVG namespace seen as %v", got)
	}
}
