// Package e2e drives the lab's page in Debian's chromium with chromedp:
// against the real ccmlab binary (built once in TestMain) and against a
// fake stream for the responsiveness and reconnect tests.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/web"
)

// switchWait bounds how long a test waits for a switch to show its new
// state. A switch rolls the CCM's DaemonSet Pod (a new Pod, a new process,
// a new leader): a fraction of a second on a quiet machine, seconds on a
// loaded one. The test waits on the condition, so the bound costs nothing
// when it is met early.
const switchWait = 60 * time.Second

// settled is the JS condition "the switch shows on (or off) and is no
// longer switching". Its aria-checked alone is not enough: while the CCM
// Pod rolls, the stream reports every controller off before the PUT that
// asked for the roll has answered, and the page ignores a click on a
// switch still busy with the previous one. A test that clicked again at
// that moment (the Service controller's switch, on the upstream provider
// whose roll takes longer) waited forever for a change never asked for.
func settled(testid string, on bool) string {
	return q(testid) + `.getAttribute("aria-checked") === "` + strconv.FormatBool(on) + `" && !` + q(testid) + `.hasAttribute("aria-busy")`
}

var (
	repoRoot string
	binPath  string // the ccmlab binary; "" when it could not be built
	buildErr error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	repoRoot, err = findRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// The browser tests need the real binary. Building it links all of
	// Kubernetes (about a minute on two cores), so it is skipped when no
	// test could use it (no browser, or -short, where every browser test
	// skips); CCMLAB_BIN names a binary built beforehand.
	flag.Parse()
	if !testing.Short() && (chromiumPath() != "" || os.Getenv("CI") == "true") {
		if p := os.Getenv("CCMLAB_BIN"); p != "" {
			binPath = p
		} else {
			var cleanup func()
			binPath, cleanup, buildErr = testutil.BuildCCMLab()
			if buildErr == nil {
				defer cleanup()
			}
		}
	}
	return m.Run()
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// chromiumPath finds Debian's chromium (or $CHROMIUM).
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if found, err := exec.LookPath(p); err == nil {
			return found
		}
		return "" // asked for that one; do not silently use another
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needChromium skips the test without a browser, except under CI=true,
// where a missing browser is a broken setup and fails the run.
//
// Under -short (make test-unit) every browser test skips, CI or not.
func needChromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test (skipped under -short)")
	}
	p := chromiumPath()
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and CI=true requires the browser tests to run: apt-get install -y chromium (or set CHROMIUM=/path/to/chromium)")
		}
		t.Skip("skipping browser test: chromium not found (apt-get install -y chromium, or set CHROMIUM=/path/to/chromium)")
	}
	return p
}

// --- the real lab ---

type lab struct {
	addr    string // host:port of the lab itself
	dataDir string
	page    string // where the browser opens the page (the lab, or a proxy in front of it)
	cmd     *exec.Cmd
	stderr  *os.File
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startLab runs the ccmlab binary on a free port with a fresh data dir and
// waits for its "ccmlab is ready:" line.
func startLab(t testing.TB, args ...string) *lab {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building the lab: %v", buildErr)
	}
	if binPath == "" {
		t.Fatal("no ccmlab binary")
	}
	dir := t.TempDir()
	l := &lab{addr: freeAddr(t), dataDir: filepath.Join(dir, "data")}
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	l.stderr = stderr
	l.cmd = exec.Command(binPath, append([]string{"--data-dir", l.dataDir, "--listen", l.addr}, args...)...)
	l.cmd.Stderr = stderr
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = l.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			l.diagnose(t)
		}
		_ = l.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = l.cmd.Process.Kill()
			<-exited
		}
		stderr.Close()
		if t.Failed() {
			if b, err := os.ReadFile(stderr.Name()); err == nil {
				t.Logf("lab stderr (last 40 KB):\n%s", tail(b, 40960))
			}
		}
	})

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ccmlab is ready:") {
				select {
				case ready <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		t.Logf("%s", line)
	case <-exited:
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("ccmlab exited before it was ready:\n%s", tail(b, 4096))
	case <-time.After(120 * time.Second):
		t.Fatal("ccmlab did not print \"ccmlab is ready:\" within 2 minutes")
	}
	l.page = l.pageOrigin(t)
	return l
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (l *lab) kubeconfig() string { return filepath.Join(l.dataDir, "kubeconfig") }

// pageOrigin is the lab itself when it serves the page. While the binary
// does not mount web.Handler yet, a proxy serves the page and forwards
// everything else (API, websocket) to the lab, keeping the Host header so
// the lab's same-origin check sees one origin.
func (l *lab) pageOrigin(t testing.TB) string {
	direct := "http://" + l.addr
	res, err := http.Get(direct + "/")
	if err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK && strings.Contains(string(b), `id="ccmlab-strings"`) {
			return direct
		}
	}
	t.Logf("the lab does not serve the page at / yet; serving web.Handler through a proxy in front of it")
	assets, err := web.Handler(web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(direct)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/" || p == "/favicon.ico" || strings.HasPrefix(p, "/static/") {
			assets.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// getJSON reads one of the lab's API endpoints.
func (l *lab) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	res, err := http.Get("http://" + l.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %s %s", path, res.Status, b)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// putJSON writes one of the lab's API endpoints, as a client outside the
// page would.
func (l *lab) putJSON(t testing.TB, path, body string) {
	t.Helper()
	sendJSON(t, http.MethodPut, "http://"+l.addr+path, "", body)
}

// sendJSON sends a JSON body (with a bearer token unless it is "") and
// wants a 2xx.
func sendJSON(t testing.TB, method, url, token, body string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s %s: %s %s", method, url, res.Status, b)
	}
}

// --- the browser ---

type browser struct {
	ctx    context.Context
	origin string

	mu       sync.Mutex
	requests []string // every URL the page asked for
	actions  []string // every request but a GET, and every fetch's answer, in order (for dump)
	problems []string // uncaught exceptions and console errors
}

// newBrowser starts a headless chromium for one test. The page's requests
// and errors are recorded; the test fails if the page threw or asked
// another origin for anything.
func newBrowser(t testing.TB, chrome, origin string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Keep a headless window from counting as hidden: the page draws
		// on animation frames.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.WindowSize(1440, 1000),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{origin: origin}
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.ctx = ctx
	// The first Run starts the browser and binds it to ctx: no timeout here.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// listen records what the page asks for and what goes wrong in it. It runs
// on chromedp's event loop, so it only appends under the lock.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
		if e.Request.Method != http.MethodGet {
			b.actions = append(b.actions, fmt.Sprintf("%s %s %s %s", time.Now().Format("15:04:05.000"), e.RequestID, e.Request.Method, e.Request.URL))
		}
	case *network.EventResponseReceived:
		if e.Type == network.ResourceTypeFetch {
			b.actions = append(b.actions, fmt.Sprintf("%s %s -> %d", time.Now().Format("15:04:05.000"), e.RequestID, e.Response.Status))
		}
	case *network.EventWebSocketCreated:
		b.requests = append(b.requests, e.URL)
	case *runtime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
		b.problems = append(b.problems, "exception: "+msg)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range e.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			b.problems = append(b.problems, "console.error: "+strings.Join(parts, " "))
		}
	}
}

// check fails the test for page errors and for any request that left the
// page's origin.
func (b *browser) check(t testing.TB, allowProblems ...string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	u, _ := url.Parse(b.origin)
	for _, r := range b.requests {
		ru, err := url.Parse(r)
		if err != nil || ru.Scheme == "data" {
			continue
		}
		if ru.Host != u.Host {
			t.Errorf("the page asked another origin: %s", r)
		}
	}
problems:
	for _, p := range b.problems {
		for _, ok := range allowProblems {
			if strings.Contains(p, ok) {
				continue problems
			}
		}
		t.Errorf("page error: %s", p)
	}
}

func (b *browser) do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.dump(t)
		t.Fatalf("%s: %v", what, err)
	}
}

// waitFor polls a JS expression until it is truthy. Every wait gets at
// least 15s: a loaded 2-core CI machine can stall a renderer for seconds,
// and a wait that holds returns at once anyway.
func (b *browser) waitFor(t testing.TB, what, expr string, timeout time.Duration) {
	t.Helper()
	timeout = max(timeout, 15*time.Second)
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil || !ok {
		b.dump(t)
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// eval evaluates a JS expression in the page and decodes its value.
func eval[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.dump(t)
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// click clicks the element with the testid as a person would, with the
// mouse, and makes sure the click reached it. The page redraws regions
// from the live stream, and two things can go wrong between chromedp's
// query and its click: the node is replaced (the protocol then answers
// "Could not find node with given id" before any input reached the page),
// or the layout moves under the pointer (a panel above grows on a loaded
// machine), so the mouse lands beside the element. A capture listener
// sees where the click landed: on the element (or inside it) is done;
// on nothing that acts is tried again; on another control fails the test,
// since that click did something the test did not ask for.
func (b *browser) click(t testing.TB, testid string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		eval[bool](t, b, clickProbe)
		// In the middle of the window: an element at its bottom edge can
		// be under the docked kubectl console (style.css), which is
		// "visible" to chromedp yet takes the click.
		eval[bool](t, b, `(() => { const e = document.querySelector(`+js(sel(testid))+`); if (e && !e.closest(".aside")) e.scrollIntoView({ block: "center", inline: "nearest" }); return true; })()`)
		ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel(testid)), chromedp.NodeVisible))
		cancel()
		if err != nil {
			if attempt < 5 && strings.Contains(err.Error(), "Could not find node with given id") {
				continue
			}
			b.dump(t)
			t.Fatalf("clicking %s: %v", testid, err)
		}
		// The mouse events have been dispatched; the click event follows
		// the release in the same task, but give the renderer time anyway.
		b.waitFor(t, "the click on "+testid+" to reach the page", `window.__ccmClick !== null`, 15*time.Second)
		landed := eval[string](t, b, `(() => {
  // closest also answers for a control its own click removed.
  const c = window.__ccmClick;
  if (c.closest(`+js(sel(testid))+`)) return "hit";
  const a = c.closest("[data-action], a, button, input, select, summary, label");
  if (!a) return "";
  return a.getAttribute("data-testid") || a.getAttribute("data-action") || a.tagName;
})()`)
		switch {
		case landed == "hit":
			return
		case landed == "" && attempt < 5:
			t.Logf("the click on %s landed beside it (the layout moved); clicking again", testid)
			continue
		default:
			b.dump(t)
			t.Fatalf("the click on %s landed on %q instead (the layout moved under the pointer)", testid, landed)
		}
	}
}

// clickProbe installs (once per document) a capture listener that keeps
// the target of the last click, and forgets the previous one.
const clickProbe = `(() => {
  if (!window.__ccmProbe) {
    window.__ccmProbe = true;
    document.addEventListener("click", (e) => { window.__ccmClick = e.target instanceof Element ? e.target : document.body; }, true);
  }
  window.__ccmClick = null;
  return true;
})()`

// dump logs what the page shows, to tell why a wait timed out.
func (b *browser) dump(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const q = (id) => { const e = document.querySelector('[data-testid="' + id + '"]'); return e ? (e.dataset.state || e.dataset.status || '') + ' ' + e.innerText.slice(0, 400) : '-'; };
		const alert = document.getElementById('alert');
		return 'last alert: ' + (alert ? alert.textContent : '-') + '\n' + ['conn-status', 'svc-strip', 'svc-stuck', 'svc-step-count', 'node-timeline', 'node-taint', 'trace-result', 'action-error', 'controllers'].map((id) => id + ': ' + q(id)).join('\n');
	})()`))
	b.mu.Lock()
	problems := strings.Join(b.problems, "\n")
	actions := strings.Join(b.actions, "\n")
	b.mu.Unlock()
	t.Logf("page state:\n%s\npage errors so far:\n%s\nthe page's requests (but GETs) and fetch answers:\n%s", text, problems, actions)
}

func sel(testid string) string { return `[data-testid="` + testid + `"]` }

// js quotes a string for use inside a JS expression.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// q is a JS expression for the element with a data-testid.
func q(testid string) string { return `document.querySelector(` + js(sel(testid)) + `)` }

func saveScreenshot(t testing.TB, b *browser, name string) string {
	t.Helper()
	return writeShot(t, b, name, "screenshot", chromedp.FullScreenshot(100))
}

// writeShot takes the picture shot makes and writes it to artifacts/name.
func writeShot(t testing.TB, b *browser, name, what string, shot chromedp.Action[[]byte]) string {
	t.Helper()
	dir := filepath.Join(repoRoot, "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}
