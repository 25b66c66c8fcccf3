package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/server/stream"
)

func openFake(t testing.TB, f *fakeLab, query string) *browser {
	b := newBrowser(t, needChromium(t), f.srv.URL)
	b.do(t, "opening the page", chromedp.Navigate(f.srv.URL+"/"+query))
	// Live and rendered: the stream's snapshot arrives before the frame
	// that draws it, and a test that acts in between finds no switches.
	b.waitFor(t, "the live state drawn", q("conn-status")+`.dataset.state === "live" && window.ccmlab.store.epoch !== "" && window.ccmlab.stats.renderedMessages === window.ccmlab.store.messages`, 20*time.Second)
	return b
}

// burstResult is what the page measured for one burst.
type burstResult struct {
	InPage  float64 // ms from the first message of the burst to the end of the render that showed the last one
	Renders int     // renders it took
	Wall    time.Duration
}

func runBurst(t testing.TB, b *browser, f *fakeLab, round int) burstResult {
	mark := eval[int](t, b, `window.ccmlab.mark()`)
	rendersBefore := eval[int](t, b, `window.ccmlab.stats.renders`)
	marker := fmt.Sprintf("burst-%d.elb.example", round)
	start := time.Now()
	f.burst(100, marker)
	b.waitFor(t, "the burst rendered",
		fmt.Sprintf(`window.ccmlab.stats.renderedMessages >= %d && document.querySelector('[data-testid="svc-row-default/web-49"] [data-testid="svc-external-ip"]').textContent === %s`, mark+100, js(marker)),
		30*time.Second)
	wall := time.Since(start)
	res := burstResult{Wall: wall}
	res.InPage = eval[float64](t, b, `window.ccmlab.stats.renderedAt - window.ccmlab.stats.burstStart`)
	res.Renders = eval[int](t, b, `window.ccmlab.stats.renders`) - rendersBefore
	return res
}

// TestResponsiveness: with 50 nodes, 200 Pods and 50 Services on the page,
// a burst of 100 changes is applied and drawn. The time is reported, not
// asserted: wall-clock limits make flaky tests on shared machines.
func TestResponsiveness(t *testing.T) {
	needChromium(t)
	f := newFakeLab(t, bigWorld(50, 200, 50))
	b := openFake(t, f, "?lang=en")
	b.waitFor(t, "50 nodes and 50 Services drawn",
		`document.querySelectorAll('[data-testid="nodes"] tr').length === 50 && document.querySelectorAll('[data-testid="services"] tr').length === 50`, 20*time.Second)
	first := eval[float64](t, b, `window.ccmlab.stats.lastRenderMs`)
	t.Logf("first full render of 50 nodes / 200 Pods / 50 Services: %.1f ms", first)
	for round := 1; round <= 5; round++ {
		r := runBurst(t, b, f, round)
		t.Logf("burst %d: 100 changes applied and drawn in %.1f ms in the page (%d render(s)); %s from send to seen by the test",
			round, r.InPage, r.Renders, r.Wall.Round(time.Millisecond))
	}
	b.check(t)
}

// BenchmarkBurst100 measures applying and drawing 100 changes on a page
// holding 50 nodes, 200 Pods and 50 Services. ms/burst is measured inside
// the page, from the first message to the end of the last render.
func BenchmarkBurst100(b *testing.B) {
	needChromium(b)
	f := newFakeLab(b, bigWorld(50, 200, 50))
	br := openFake(b, f, "?lang=en")
	br.waitFor(b, "50 Services drawn", `document.querySelectorAll('[data-testid="services"] tr').length === 50`, 20*time.Second)
	var total float64
	renders := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := runBurst(b, br, f, i)
		total += r.InPage
		renders += r.Renders
	}
	b.ReportMetric(total/float64(b.N), "ms/burst")
	b.ReportMetric(float64(renders)/float64(b.N), "renders/burst")
}

// TestReconnect: the lab restarts (bye, a few seconds of 503s, new epoch);
// the page says it is reconnecting, keeps the old state visible, and then
// resyncs from the new snapshot. A slow-client kick (1013) resumes with
// ?since=<lastSeq>&epoch=<epoch> and misses nothing.
func TestReconnect(t *testing.T) {
	needChromium(t)
	f := newFakeLab(t, bigWorld(3, 3, 1))
	b := openFake(t, f, "?lang=ja")
	b.waitFor(t, "three nodes", `document.querySelectorAll('[data-testid="nodes"] tr').length === 3`, 10*time.Second)

	// A slow-client kick first.
	f.publish(stream.Controllers{"node": true, "nodelifecycle": true, "route": true, "service": false})
	b.waitFor(t, "the Service controller off", q("ctrl-switch-service")+`.getAttribute("aria-checked") === "false"`, 10*time.Second)
	f.kick()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.wsQuery)
		last := ""
		if n > 0 {
			last = f.wsQuery[n-1]
		}
		f.mu.Unlock()
		if n >= 2 {
			if !strings.Contains(last, "since=1") || !strings.Contains(last, "epoch=epoch-1") {
				t.Errorf("after a 1013 the page reconnected with %q, want since=1&epoch=epoch-1", last)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the page did not reconnect after a 1013")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.waitFor(t, "live again", q("conn-status")+`.dataset.state === "live"`, 10*time.Second)
	f.publish(stream.Controllers{"node": true, "nodelifecycle": true, "route": true, "service": true})
	b.waitFor(t, "the message after the resume applied", q("ctrl-switch-service")+`.getAttribute("aria-checked") === "true"`, 10*time.Second)

	// Now a restart, with a different world behind it.
	done := make(chan struct{})
	go func() {
		f.restart(bigWorld(4, 4, 2), 2500*time.Millisecond)
		close(done)
	}()
	b.waitFor(t, "the reconnecting state", `["restarting", "reconnecting"].includes(`+q("conn-status")+`.dataset.state) && document.body.classList.contains("stale")`, 10*time.Second)
	b.waitFor(t, "the old state still shown", `document.querySelectorAll('[data-testid="nodes"] tr').length === 3`, time.Second)
	<-done
	b.waitFor(t, "live after the restart", q("conn-status")+`.dataset.state === "live" && !document.body.classList.contains("stale")`, 20*time.Second)
	b.waitFor(t, "the new snapshot", `document.querySelectorAll('[data-testid="nodes"] tr').length === 4 && window.ccmlab.store.epoch === "epoch-2"`, 10*time.Second)
	f.mu.Lock()
	last := f.wsQuery[len(f.wsQuery)-1]
	f.mu.Unlock()
	if strings.Contains(last, "since=") {
		t.Errorf("after a bye the page resumed with %q; it must ask for a fresh snapshot", last)
	}
	b.check(t, "503", "WebSocket")
}

// TestPresenterShortcuts: presenter mode from the URL, single-key
// shortcuts for the switches and "next cloud call", the help dialog, and
// every action reachable from the keyboard.
func TestPresenterShortcuts(t *testing.T) {
	needChromium(t)
	w := bigWorld(3, 3, 2)
	w.stepMode = true
	w.waiting = append(w.waiting, w.calls[0])
	w.waiting[0].State = "waiting"
	f := newFakeLab(t, w)
	b := openFake(t, f, "?lang=en&presenter=1")
	b.waitFor(t, "presenter mode", `document.documentElement.classList.contains("presenter") && `+q("presenter-toggle")+`.getAttribute("aria-pressed") === "true"`, 5*time.Second)

	notFocusable := eval[[]string](t, b, `[...document.querySelectorAll("[data-action]")].filter((e) => !(e instanceof HTMLButtonElement) || e.tabIndex < 0).map((e) => e.outerHTML.slice(0, 80))`)
	if len(notFocusable) > 0 {
		t.Errorf("actions not reachable by keyboard: %v", notFocusable)
	}

	b.do(t, "pressing s", chromedp.KeyEvent("s"))
	b.waitFor(t, "the Service controller off", q("ctrl-switch-service")+`.getAttribute("aria-checked") === "false"`, 10*time.Second)
	b.do(t, "pressing .", chromedp.KeyEvent("."))
	waitRecorded(t, f, "POST /api/cloud/stepmode/release")
	waitRecorded(t, f, `PUT /api/controllers/service {"enabled":false}`)

	b.do(t, "pressing ?", chromedp.KeyEvent("?"))
	b.waitFor(t, "the shortcut list", q("shortcuts")+`.open`, 5*time.Second)
	b.do(t, "closing it", chromedp.Click(chromedp.CSS(sel("shortcuts-close")), chromedp.NodeVisible))
	b.waitFor(t, "the list closed", `!`+q("shortcuts")+`.open`, 5*time.Second)

	// "]" picks the next Service; a Service's name in the table picks it too.
	b.do(t, "pressing ]", chromedp.KeyEvent("]"))
	b.waitFor(t, "the other Service picked", q("flow-service-select")+`.value === "default/web-0"`, 5*time.Second)
	// Presenter mode shows the map and the strip only.
	if hidden := eval[bool](t, b, q("nodes")+`.offsetParent === null && `+q("cloud-map")+`.getBoundingClientRect().width > 0`); !hidden {
		t.Error("presenter mode should show the map and hide the tables")
	}

	// Outside presenter mode a letter does nothing.
	b.do(t, "pressing p", chromedp.KeyEvent("p"))
	b.waitFor(t, "presenter mode off", `!document.documentElement.classList.contains("presenter")`, 5*time.Second)
	b.click(t, "svc-pick-default/web-1")
	b.waitFor(t, "web-1 picked from the table", q("flow-service-select")+`.value === "default/web-1" && document.activeElement === document.getElementById("flow")`, 5*time.Second)
	before := len(f.recorded())
	b.do(t, "pressing s again", chromedp.KeyEvent("s"))
	time.Sleep(300 * time.Millisecond)
	if got := f.recorded(); len(got) != before {
		t.Errorf("a shortcut fired outside presenter mode: %v", got[before:])
	}
	b.check(t)
}

func waitRecorded(t *testing.T, f *fakeLab, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range f.recorded() {
			if c == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the page never sent %q; it sent %v", want, f.recorded())
}
