package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// static holds the stylesheet, the ES modules and the icon. They are served
// under /static/<version>/, where version is a hash of all of them, so a
// browser may cache them for a year and still never runs old JS against a
// new page.
//
//go:embed static
var static embed.FS

// Config tunes the page handler. The zero value is ready to use.
type Config struct {
	// DefaultLang is the language when neither ?lang=, the cookie nor the
	// browser's Accept-Language decides. Empty means English.
	DefaultLang Lang
	// Replay serves the page of `ccmlab replay`: it plays the recording at
	// api/recording instead of connecting to a lab.
	Replay bool
}

// LangCookie remembers the language a visitor picked with ?lang=.
const LangCookie = "ccmlab_lang"

// Handler serves the page at / and its assets at /static/. Every other
// path is a JSON 404, like the rest of the lab's HTTP surface.
func Handler(cfg Config) (http.Handler, error) {
	if cfg.DefaultLang == "" {
		cfg.DefaultLang = EN
	}
	if !cfg.DefaultLang.Valid() {
		return nil, fmt.Errorf("web: unknown default language %q (want %s)", cfg.DefaultLang, strings.Join(langNames(), " or "))
	}
	assets, err := loadAssets()
	if err != nil {
		return nil, err
	}
	h := &handler{cfg: cfg, assets: assets, pages: map[Lang][]byte{}}
	// The page only depends on the language, so render it once per language.
	for _, l := range Langs() {
		var b bytes.Buffer
		// The page names its assets relative to itself, so it also works
		// behind a prefix (the classroom's /s/<name>/).
		d := pageData(l, strings.TrimPrefix(h.assets.base, "/"))
		d.Replay = cfg.Replay
		if err := Page(d).Render(context.Background(), &b); err != nil {
			return nil, fmt.Errorf("web: rendering the %s page: %w", l, err)
		}
		h.pages[l] = b.Bytes()
	}
	return h, nil
}

type handler struct {
	cfg    Config
	assets *assets
	pages  map[Lang][]byte
}

// csp keeps every request the page makes on the lab's own origin: no CDN,
// no web font, no beacon can sneak in, even through a future edit.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpguard.WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/index.html":
		h.page(w, r)
	case strings.HasPrefix(r.URL.Path, "/static/"):
		h.assets.serve(w, r)
	case r.URL.Path == "/favicon.ico":
		// Browsers ask for it whatever the page says; answer with the icon
		// rather than a 404 in the console.
		r2 := r.Clone(r.Context())
		r2.URL.Path = h.assets.base + "icon.svg"
		h.assets.serve(w, r2)
	default:
		httpguard.WriteError(w, http.StatusNotFound, "no such page: "+r.URL.Path+" (the lab's page is at /)")
	}
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	lang, fromQuery := h.lang(r)
	if fromQuery {
		http.SetCookie(w, &http.Cookie{
			Name: LangCookie, Value: string(lang), Path: "/",
			MaxAge: int((365 * 24 * time.Hour).Seconds()), SameSite: http.SameSiteLaxMode,
		})
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Language", string(lang))
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Vary", "Accept-Language, Cookie")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	body := h.pages[lang]
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// lang decides the page's language: ?lang= (remembered in a cookie), then
// the cookie, then the browser's preference, then the default. It reports
// whether the query decided, so the caller can set the cookie.
func (h *handler) lang(r *http.Request) (Lang, bool) {
	if q := Lang(r.URL.Query().Get("lang")); q.Valid() {
		return q, true
	}
	if c, err := r.Cookie(LangCookie); err == nil && Lang(c.Value).Valid() {
		return Lang(c.Value), false
	}
	if l, ok := preferred(r.Header.Get("Accept-Language")); ok {
		return l, false
	}
	return h.cfg.DefaultLang, false
}

// preferred picks the supported language the Accept-Language header ranks
// highest ("ja-JP,ja;q=0.9,en;q=0.8" -> ja). Ties keep the header's order.
func preferred(header string) (Lang, bool) {
	best, bestQ := Lang(""), 0.0
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(strings.TrimSpace(part), ";")
		tag := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, p := range fields[1:] {
			p = strings.TrimSpace(p)
			if v, ok := strings.CutPrefix(p, "q="); ok {
				if _, err := fmt.Sscanf(v, "%g", &q); err != nil {
					q = 0
				}
			}
		}
		base, _, _ := strings.Cut(tag, "-")
		l := Lang(base)
		if !l.Valid() || q <= bestQ {
			continue
		}
		best, bestQ = l, q
	}
	return best, best != ""
}

// assets are the embedded static files, indexed by their path under
// /static/<version>/.
type assets struct {
	version string
	base    string // "/static/<version>/"
	files   map[string]asset
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

func loadAssets() (*assets, error) {
	a := &assets{files: map[string]asset{}}
	sum := sha256.New()
	var names []string
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, p := range names {
		body, err := static.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(p, "static/")
		one := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // do not depend on the host's mime.types
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		a.files[rel] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(one[:8]) + `"`}
		fmt.Fprintf(sum, "%s %x\n", rel, one)
	}
	a.version = hex.EncodeToString(sum.Sum(nil)[:6])
	a.base = "/static/" + a.version + "/"
	return a, nil
}

// serve answers /static/<version>/<file>. The current version is cached
// for a year; a page from an older build asking for its version still gets
// today's file, but with revalidation, so it is never pinned to it.
func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/static/")
	version, name, ok := strings.Cut(rest, "/")
	f, found := a.files[name]
	if !ok || !found || strings.Contains(name, "..") {
		httpguard.WriteError(w, http.StatusNotFound, "no such asset: "+r.URL.Path)
		return
	}
	hd := w.Header()
	if version == a.version {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", f.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", f.ctype)
	hd.Set("Content-Length", fmt.Sprint(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}

// assetPaths lists the embedded files as URL paths, so tests can check
// that the page loads every one of them.
func (h *handler) assetPaths() []string {
	out := make([]string, 0, len(h.assets.files))
	for name := range h.assets.files {
		out = append(out, h.assets.base+name)
	}
	sort.Strings(out)
	return out
}
