package classroom

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

const (
	studentCookie    = "ccmlab_student"
	instructorCookie = "ccmlab_instructor"
)

// Classroom is the portal: the students' proxy, the dashboard and its API.
type Classroom struct {
	cfg     Config
	tokens  *tokens
	backend Backend
	class   *class
	mux     *http.ServeMux
	// guard checks Host, cross-origin and query before the mux; Run
	// replaces it once the listen address is known.
	guard atomic.Pointer[httpguard.Guard]
	// signIns bounds each client's failed token guesses.
	signIns *httpguard.SignIns
	// conns counts each client's open connections; Run sets it.
	conns atomic.Pointer[httpguard.ClientConns]
	// runCtx is set by Run: watchers of labs live no longer than it.
	runCtx context.Context
	mu     sync.Mutex
}

// New prepares the class: the data dir, the tokens and students.csv are
// written here, so a bad roster or an unwritable dir fails before any lab
// starts.
func New(cfg Config) (*Classroom, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Limits.defaults()
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	signIns, err := httpguard.NewSignIns(httpguard.SignInConfig{Burst: cfg.Limits.FailedSignIns, Window: cfg.Limits.SignInWindow, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = abs
	if err := os.MkdirAll(filepath.Join(abs, "students"), 0o700); err != nil {
		return nil, fmt.Errorf("--data-dir %s is not usable: %w", abs, err)
	}
	t, err := loadTokens(abs, cfg.Token, cfg.Students)
	if err != nil {
		return nil, fmt.Errorf("the class's tokens: %w", err)
	}
	c := &Classroom{cfg: cfg, tokens: t, signIns: signIns, runCtx: context.Background()}
	c.class = newClass(&c.cfg, t)
	onReady := func(name, addr string, done <-chan struct{}) {
		c.mu.Lock()
		ctx := c.runCtx
		c.mu.Unlock()
		c.class.watch(ctx, name, addr, done)
	}
	switch cfg.Backend {
	case BackendKubernetes:
		kb, err := newKubeBackend(&c.cfg, t, onReady)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		changed, err := kb.adoptTokens(ctx, cfg.Token != "")
		cancel()
		if err != nil {
			return nil, err
		}
		if changed {
			if err := t.save(abs); err != nil {
				return nil, fmt.Errorf("the class's tokens: %w", err)
			}
		}
		c.backend = kb
	default:
		c.backend = newLocalBackend(&c.cfg, t, onReady)
	}
	c.class.status = c.backend.Status
	g, err := httpguard.New(httpguard.Config{Listen: cfg.Listen, PublicURL: cfg.PublicURL, AllowedHosts: cfg.AllowedHosts})
	if err != nil {
		return nil, err
	}
	c.guard.Store(g)
	c.routes()
	return c, nil
}

// InstructorToken is the token that opens the dashboard and every lab.
func (c *Classroom) InstructorToken() string { return c.tokens.instructor }

// StudentToken is the student's own token.
func (c *Classroom) StudentToken(name string) string { return c.tokens.students[name] }

// Handler serves the portal: every request passes the guard (its Host is
// the portal's, no cross-origin mutation or websocket, no repeated query
// parameter) before the routes, the students' labs included.
func (c *Classroom) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.guard.Load().Handler(c.mux).ServeHTTP(w, r)
	})
}

// Run serves the portal on ln until ctx ends, then stops every lab.
func (c *Classroom) Run(ctx context.Context, ln net.Listener) error {
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	base := c.cfg.PublicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	if c.cfg.Listen == "" {
		g, err := httpguard.New(httpguard.Config{Listen: ln.Addr().String(), PublicURL: c.cfg.PublicURL, AllowedHosts: c.cfg.AllowedHosts})
		if err != nil {
			return err
		}
		c.guard.Store(g)
	}
	if err := writeStudentsCSV(filepath.Join(c.cfg.DataDir, "students.csv"), base, c.cfg.Students, c.tokens); err != nil {
		return fmt.Errorf("writing students.csv: %w", err)
	}
	if err := c.backend.Prepare(ctx); err != nil {
		return err
	}
	// The portal faces every student, and whoever else reaches its
	// address: each client's connections are capped, and each one is
	// bounded in time (httpguard.Timeouts; a proxied websocket by
	// Limits.WebsocketIdle and WebsocketWrite).
	conns, err := httpguard.LimitClientConns(ln, httpguard.ClientConnsConfig{Max: c.cfg.Limits.ConnsPerClient, Logger: c.cfg.Logger, Clock: c.cfg.Clock})
	if err != nil {
		return err
	}
	c.conns.Store(conns)
	srv, err := httpguard.NewServer(httpguard.ServerConfig{
		Handler:     c.Handler(),
		Timeouts:    c.cfg.Limits.Timeouts,
		BaseContext: func(net.Listener) context.Context { return ctx },
	})
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(conns) }()
	backendDone := make(chan error, 1)
	backendCtx, stopBackend := context.WithCancel(context.WithoutCancel(ctx))
	go func() { backendDone <- c.backend.Run(backendCtx) }()

	where := c.cfg.DataDir
	if c.cfg.Backend == BackendKubernetes {
		where = "namespace " + c.cfg.Kube.Namespace + " of the cluster"
	}
	fmt.Fprintf(c.cfg.Out, "ccmlab classroom: %d students, labs in %s\n", len(c.cfg.Students), where)
	fmt.Fprintf(c.cfg.Out, "  student links: %s\n", filepath.Join(c.cfg.DataDir, "students.csv"))
	fmt.Fprintf(c.cfg.Out, "  instructor token: %s\n", filepath.Join(c.cfg.DataDir, "instructor-token"))
	fmt.Fprintf(c.cfg.Out, "ccmlab classroom is ready: %s/?token=%s\n", strings.TrimRight(base, "/"), url.QueryEscape(c.tokens.instructor))

	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("portal: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = srv.Shutdown(shutdownCtx)
	cancel()
	// Open websockets are hijacked and outlive Shutdown; the labs'
	// goodbye ends them.
	stopBackend()
	<-backendDone
	fmt.Fprintln(c.cfg.Out, "ccmlab classroom stopped")
	return err
}

func (c *Classroom) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	m.HandleFunc("/s/{name}", func(w http.ResponseWriter, r *http.Request) {
		u := *r.URL
		u.Path += "/"
		http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
	})
	m.HandleFunc("/s/{name}/", c.student)
	m.HandleFunc("GET /{$}", c.instructor(c.dashboard))
	m.HandleFunc("GET /dashboard.js", serveAsset("dashboard.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /dashboard.css", serveAsset("dashboard.css", "text/css; charset=utf-8"))
	m.HandleFunc("GET /api/class", c.instructor(c.getClass))
	m.HandleFunc("GET /api/class/events", c.instructor(c.classEvents))
	m.HandleFunc("GET /class/table", c.instructor(c.classTable))
	m.HandleFunc("GET /api/class.csv", c.instructor(c.classCSV))
	m.HandleFunc("POST /api/actions/reset", c.instructor(c.actionReset))
	m.HandleFunc("PUT /api/actions/latency", c.instructor(c.actionLatency))
	m.HandleFunc("GET /api/challenge", c.instructor(c.challengeCauses))
	m.HandleFunc("POST /api/actions/challenge", c.instructor(c.actionChallenge))
	m.HandleFunc("GET /students.csv", c.instructor(c.studentsCSV))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpguard.WriteError(w, http.StatusNotFound, "no such page: "+r.URL.Path+" (the dashboard is at /, each student's lab at /s/<name>/)")
	})
	c.mux = m
}

// studentsCSV hands the instructor the students' links (the portal's
// students.csv), for a portal whose data dir is out of reach (in a Pod).
func (c *Classroom) studentsCSV(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile(filepath.Join(c.cfg.DataDir, "students.csv"))
	if err != nil {
		httpguard.WriteError(w, http.StatusServiceUnavailable, "students.csv is not written yet")
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="students.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type role int

const (
	roleNone  role = iota // no token at all: 401
	roleWrong             // a token, but not one that opens this: 403
	roleStudent
	roleInstructor
)

func tokenIs(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signIn tells who the request is (who), within the client's budget of
// failed sign-ins: a request that presents tokens none of which opens
// anything spends one. A client out of budget is answered 429 and false,
// its tokens not even compared, right or wrong: past the budget a guess
// tells nothing.
func (c *Classroom) signIn(w http.ResponseWriter, r *http.Request, studentToken string) (role, string, bool) {
	if len(presented(r)) == 0 {
		return roleNone, "", true // no token is no guess
	}
	si, wait := c.signIns.Begin(r)
	if si == nil {
		httpguard.WriteTooMany(w, wait)
		return roleNone, "", false
	}
	rl, tok := c.who(r, studentToken)
	si.Done(rl != roleWrong)
	return rl, tok, true
}

// presented lists the tokens r carries: ?token=, then the bearer header,
// then the portal's cookies.
func presented(r *http.Request) []string {
	var presented []string
	if q := r.URL.Query().Get("token"); q != "" {
		presented = append(presented, q)
	}
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		presented = append(presented, h)
	}
	for _, ck := range r.Cookies() {
		if ck.Name == studentCookie || ck.Name == instructorCookie {
			presented = append(presented, ck.Value)
		}
	}
	return presented
}

// who tells who the request is, for a student's path (studentToken set)
// or the instructor's pages: the best role any token it presents gives.
func (c *Classroom) who(r *http.Request, studentToken string) (role, string) {
	presented := presented(r)
	if len(presented) == 0 {
		return roleNone, ""
	}
	best, tok := roleWrong, ""
	for _, p := range presented {
		switch {
		case tokenIs(p, studentToken):
			return roleStudent, p
		case tokenIs(p, c.tokens.instructor):
			best, tok = roleInstructor, p
		}
	}
	return best, tok
}

// remember turns a ?token= link into a cookie, so the page's own requests
// (fetches, the websocket) carry the token without it in every URL.
func (c *Classroom) remember(w http.ResponseWriter, r *http.Request, rl role, tok, studentPath string) {
	if r.URL.Query().Get("token") != tok {
		return
	}
	// Behind a TLS-terminating proxy r.TLS is nil: the public URL says
	// whether browsers reach the portal over https.
	secure := r.TLS != nil || strings.HasPrefix(strings.ToLower(c.cfg.PublicURL), "https://")
	ck := &http.Cookie{Value: tok, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure}
	if rl == roleStudent {
		ck.Name, ck.Path = studentCookie, studentPath
	} else {
		ck.Name, ck.Path = instructorCookie, "/"
	}
	http.SetCookie(w, ck)
}

func refuse(w http.ResponseWriter, rl role) {
	if rl == roleNone {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ccmlab classroom"`)
		httpguard.WriteError(w, http.StatusUnauthorized, "this page needs a token: open your link from students.csv, or send Authorization: Bearer <token>")
		return
	}
	httpguard.WriteError(w, http.StatusForbidden, "this token does not open this page")
}

// instructor guards the dashboard and its API (the guard has refused
// cross-origin mutations already).
func (c *Classroom) instructor(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rl, tok, ok := c.signIn(w, r, "")
		if !ok {
			return
		}
		if rl != roleInstructor {
			refuse(w, rl)
			return
		}
		c.remember(w, r, rl, tok, "")
		h(w, r)
	}
}

// student proxies /s/<name>/... to the student's lab. A name not in the
// class is answered as a known one is until a token opens it (401 without
// one, 403 with a wrong one): the portal does not tell who is in the class.
func (c *Classroom) student(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	known := c.known(name)
	want := ""
	if known {
		want = c.tokens.students[name]
	}
	rl, tok, ok := c.signIn(w, r, want)
	if !ok {
		return
	}
	if rl != roleStudent && rl != roleInstructor {
		refuse(w, rl)
		return
	}
	if !known {
		// Only the instructor's token gets here.
		httpguard.WriteError(w, http.StatusNotFound, fmt.Sprintf("no student %q in this class", name))
		return
	}
	// The instructor looks, the student acts: an instructor who could
	// click in a student's lab could undo their work by mistake. The
	// dashboard's actions go to the labs directly, not through here.
	if rl == roleInstructor && r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpguard.WriteError(w, http.StatusForbidden, "the instructor's view of a student's lab is read-only; use the dashboard's actions")
		return
	}
	prefix := "/s/" + name
	c.remember(w, r, rl, tok, prefix+"/")
	end := func() {}
	if rl == roleStudent {
		// Only the student's own requests keep the lab from idling out.
		end = c.backend.Visit(name)
	}
	defer end()
	addr, err := c.backend.Ensure(r.Context(), name)
	if err != nil {
		httpguard.WriteError(w, http.StatusBadGateway, err.Error())
		return
	}
	if httpguard.IsWebsocket(r) {
		// The portal relays the lab's frames byte for byte; what bounds
		// a stalled client is its connection's deadlines, and the end
		// of the lab's side (the lab drops a client that misses a pong).
		w = httpguard.BoundHijacked(w, c.cfg.Limits.WebsocketIdle, c.cfg.Limits.WebsocketWrite)
	}
	c.proxy(name, addr, prefix, rl).ServeHTTP(w, r)
}

func (c *Classroom) known(name string) bool {
	for _, s := range c.cfg.Students {
		if s == name {
			return true
		}
	}
	return false
}

// proxy forwards to the lab at addr with the prefix stripped and the
// student's token as the bearer. The lab is asked by its own address (the
// Host it answers to); the portal's guard has already checked the
// browser's Origin against the portal's Host, so the Origin, which names
// the portal, is not passed on for the lab to compare with its own.
func (c *Classroom) proxy(name, addr, prefix string, rl role) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: addr}
	token := c.tokens.students[name]
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The lab leaves the instructor's controls out of a
			// student's page by this header; only the portal sets it.
			pr.Out.Header.Del(httpguard.RoleHeader)
			if rl == roleStudent {
				pr.Out.Header.Set(httpguard.RoleHeader, httpguard.RoleStudent)
			}
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
			pr.Out.URL.RawPath = ""
			q := pr.Out.URL.Query()
			if q.Has("token") {
				q.Del("token")
				pr.Out.URL.RawQuery = q.Encode()
			}
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Del("Origin")
			pr.Out.Header.Set("Authorization", "Bearer "+token)
			// The portal's cookies stay at the portal.
			pr.Out.Header.Del("Cookie")
			for _, ck := range pr.In.Cookies() {
				if ck.Name != studentCookie && ck.Name != instructorCookie {
					pr.Out.AddCookie(ck)
				}
			}
		},
		ModifyResponse: func(res *http.Response) error {
			// The lab's cookies (the page language) belong to its prefix.
			cookies := res.Cookies()
			if len(cookies) == 0 {
				return nil
			}
			res.Header.Del("Set-Cookie")
			for _, ck := range cookies {
				if ck.Path == "" || ck.Path == "/" {
					ck.Path = prefix + "/"
				}
				res.Header.Add("Set-Cookie", ck.String())
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			httpguard.WriteError(w, http.StatusBadGateway, fmt.Sprintf("the lab of %s did not answer: %v", name, err))
		},
	}
}
