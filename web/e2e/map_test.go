package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// mapLog records, in the page, what happens to the map's instance boxes and
// flashes: boxes added (with their state and classes), and every change of
// a box's data-state or class, in order. Reading the order, not the timing,
// is what tells a node joining from a box simply appearing.
const mapLog = `(() => {
	window.__mapLog = [];
	const log = (s) => window.__mapLog.push(s);
	new MutationObserver((ms) => {
		for (const m of ms) {
			if (m.type === "childList") {
				for (const n of m.addedNodes) {
					if (n.classList && n.classList.contains("map-inst")) log("add " + n.dataset.id + " " + n.dataset.state + " " + n.getAttribute("class"));
					if (n.classList && n.classList.contains("map-flash")) log("flash " + n.dataset.caller + " " + n.dataset.action);
				}
			} else if (m.target.classList.contains("map-inst")) {
				log(m.attributeName + " " + m.target.dataset.id + " " + m.target.getAttribute(m.attributeName));
			}
		}
	}).observe(document.querySelector('[data-testid="cloud-map"]'), { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state", "class"] });
	return true;
})()`

// TestLiveMap: the map of the real lab shows each instance inside its
// zone's column, each load balancer's line to each of its targets with the
// target's health, and a node joining (the box entering, then
// "uninitialized" while the Node controller is off, then "ready" once it
// runs and removes the taint), with the Node controller's cloud calls
// flashing; stopped, the node is shut down, terminated, gone. Screenshots of the map, normal and in presenter mode, go to
// artifacts/.
func TestLiveMap(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "en")

	var insts []struct {
		ID   string `json:"id"`
		Zone string `json:"zone"`
	}
	l.getJSON(t, "/api/cloud/instances", &insts)
	b.waitFor(t, "every instance on the map, ready", `(() => { const g = [...document.querySelectorAll('[data-testid="cloud-map"] .map-inst')]; return g.length === `+itoa(len(insts))+` && g.every((x) => x.dataset.state === "ready"); })()`, 30*time.Second)
	zones := map[string]bool{}
	for _, p := range eval[[]placed](t, b, mapPlacement) {
		want := ""
		for _, in := range insts {
			if in.ID == p.ID {
				want = in.Zone
			}
		}
		zones[p.Zone] = true
		if p.Zone != want || !p.Inside {
			t.Errorf("instance %s drawn in zone %q (inside its column: %v), want %q", p.ID, p.Zone, p.Inside, want)
		}
	}
	labels := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="cloud-map"] .map-zone-label')].map((e) => e.textContent)`)
	if len(labels) != len(zones) {
		t.Errorf("zone labels %v, want one per zone of %v", labels, zones)
	}
	// The control-plane node, which holds the mirror Pods, says what it is.
	if n := eval[int](t, b, `[...document.querySelectorAll('[data-testid="cloud-map"] [data-testid="map-inst-taint"]')].filter((e) => e.textContent.startsWith("⚙ control plane")).length`); n != 1 {
		t.Errorf("%d instance boxes say control plane, want 1", n)
	}

	createWeb(t, kubeClient(t, l))
	b.waitFor(t, "step 5", `Number(`+q("svc-step-count")+`.dataset.step) >= 5`, 60*time.Second)
	var lbs []struct {
		Name    string `json:"name"`
		Targets []struct {
			ID string `json:"id"`
		} `json:"targets"`
	}
	l.getJSON(t, "/api/cloud/loadbalancers", &lbs)
	if len(lbs) != 1 || len(lbs[0].Targets) == 0 {
		t.Fatalf("want one load balancer with targets, got %+v", lbs)
	}
	lb := lbs[0]
	b.waitFor(t, "the load balancer on the map", q("map-lb-"+lb.Name)+` !== null`, 15*time.Second)
	b.waitFor(t, "a healthy line to every target",
		`document.querySelectorAll('[data-testid="map-lb-line"][data-lb="`+lb.Name+`"][data-health="healthy"]').length === `+itoa(len(lb.Targets)), 60*time.Second)
	for _, tg := range lb.Targets {
		line := `document.querySelector('[data-testid="map-lb-line"][data-lb="` + lb.Name + `"][data-target="` + tg.ID + `"]')`
		if ok := eval[bool](t, b, line+` !== null && `+line+`.dataset.instance === `+js(tg.ID)+` && `+line+`.querySelector("text").textContent === "✓"`); !ok {
			t.Errorf("no healthy line with its glyph from %s to %s", lb.Name, tg.ID)
		}
	}
	b.waitFor(t, "the routes on the map", `document.querySelectorAll('[data-testid="cloud-map"] .map-route').length >= 3`, 60*time.Second)

	// A node joins while the Node controller is off: it keeps the
	// uninitialized taint until the controller runs.
	if !eval[bool](t, b, mapLog) {
		t.Fatal("could not watch the map")
	}
	b.click(t, "ctrl-switch-node")
	b.waitFor(t, "the Node controller off", settled("ctrl-switch-node", false), switchWait)
	b.waitFor(t, "the map's actor off", q("map-actor-node")+`.dataset.state === "off"`, 5*time.Second)
	b.click(t, "launch-instance")
	b.waitFor(t, "a new instance", `document.querySelectorAll('[data-testid="cloud-map"] .map-inst').length === `+itoa(len(insts)+1), 30*time.Second)
	id := eval[string](t, b, `[...document.querySelectorAll('[data-testid="cloud-map"] .map-inst')].map((g) => g.dataset.id).find((x) => !`+jsList(insts, func(i int) string { return insts[i].ID })+`.includes(x))`)
	box := q("map-inst-" + id)
	b.waitFor(t, "the new node uninitialized, its taint shown", box+`.dataset.state === "uninitialized" && `+box+`.querySelector('[data-testid="map-inst-taint"]').dataset.on === "true"`, 60*time.Second)
	b.click(t, "ctrl-switch-node")
	b.waitFor(t, "the new node ready", box+`.dataset.state === "ready" && `+box+`.querySelector('[data-testid="map-inst-taint"]').dataset.on === "false"`, 60*time.Second)

	var states []string
	entered, flashed := false, false
	for _, e := range eval[[]string](t, b, `window.__mapLog`) {
		f := strings.Fields(e)
		switch {
		case len(f) >= 3 && f[0] == "add" && f[1] == id:
			states = append(states, f[2])
			entered = strings.Contains(e, "entering")
		case len(f) >= 3 && f[0] == "data-state" && f[1] == id:
			states = append(states, f[2])
		case len(f) >= 2 && f[0] == "flash" && f[1] == "node-controller":
			flashed = true
		}
	}
	t.Logf("the new box's states: %v; log: %d entries", states, len(eval[[]string](t, b, `window.__mapLog`)))
	if !entered {
		t.Error("the new instance's box did not enter with the entering class")
	}
	iu, ir := indexOf(states, "uninitialized"), indexOf(states, "ready")
	if iu < 0 || ir < iu || states[len(states)-1] != "ready" {
		t.Errorf("the new box went through %v, want ... uninitialized ... ready", states)
	}
	if !flashed {
		t.Error("no cloud call of the Node controller flashed on the map")
	}

	// A stopped VM is shut down on the map; the screenshots show it.
	b.click(t, "inst-stop-"+id)
	b.waitFor(t, "the stopped instance shut down on the map", box+`.dataset.state === "shutdown"`, 30*time.Second)

	saveScreenshotOf(t, b, "map-region", "map-normal.png")
	b.click(t, "presenter-toggle")
	b.waitFor(t, "presenter mode: map and strip only", `document.documentElement.classList.contains("presenter") && `+q("nodes")+`.offsetParent === null && `+q("svc-strip")+`.offsetParent !== null`, 10*time.Second)
	b.do(t, "scrolling to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	saveScreenshot(t, b, "map-presenter.png")

	// Terminated, it is gone (the cloud lists it for an hour, as AWS does).
	b.click(t, "presenter-toggle")
	b.waitFor(t, "presenter mode off", `!document.documentElement.classList.contains("presenter")`, 10*time.Second)
	b.click(t, "inst-terminate-"+id)
	b.waitFor(t, "the terminated instance gone on the map", box+`.dataset.state === "gone"`, 30*time.Second)
	b.check(t)
}

// TestDataPathAnySender: a request sent through the load balancer's
// listener by a plain HTTP client (as with curl) shows on the data path of
// the Japanese page, also after the page is opened again; the data-path
// heading is clear of the line from the cloud LB box; and no evidence,
// stuck detail or trace text on the Japanese page is English.
func TestDataPathAnySender(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "ja")
	createWeb(t, kubeClient(t, l))
	b.waitFor(t, "step 5", `Number(`+q("svc-step-count")+`.dataset.step) >= 5 && `+q("svc-step-status")+`.dataset.status === "done"`, 60*time.Second)
	b.waitFor(t, "a route for every node", `document.querySelectorAll('[data-testid="routes"] tr[data-testid^="route-"]').length >= 3`, 60*time.Second)
	b.waitFor(t, "healthy targets", `(() => { const ts = [...document.querySelectorAll('[data-testid="lb-target"]')]; return ts.length >= 3 && ts.every((x) => x.dataset.health === "healthy"); })()`, 60*time.Second)

	var state struct {
		Cloud struct {
			Listeners []struct {
				Address string `json:"address"`
			} `json:"listeners"`
		} `json:"cloud"`
	}
	l.getJSON(t, "/api/state", &state)
	if len(state.Cloud.Listeners) == 0 {
		t.Fatal("the load balancer has no listener")
	}
	res, err := http.Get("http://" + state.Cloud.Listeners[0].Address + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET through the listener: %s", res.Status)
	}
	var traces []struct {
		ID string `json:"id"`
	}
	l.getJSON(t, "/api/traces", &traces)
	if len(traces) == 0 {
		t.Fatal("no trace of the request")
	}
	id := traces[len(traces)-1].ID
	shown := q("trace-result") + `.dataset.trace === ` + js(id) + ` && ` + q("trace-result") + `.dataset.status === "200"`
	b.waitFor(t, "the listener's request on the data path", shown+` && `+q("packet")+`.dataset.state === "arrived" && document.querySelectorAll('[data-testid="diagram"] .hop:not(.template)').length >= 5`, 30*time.Second)
	b.waitFor(t, "step 6 done", q("svc-step-traffic")+`.dataset.status === "done"`, 15*time.Second)

	// The heading of the data path and the line from the LB box apart.
	if cross := eval[bool](t, b, `(() => { const a = `+q("dg-link")+`.getBoundingClientRect(), b = `+q("dg-data-label")+`.getBoundingClientRect(); return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; })()`); cross {
		t.Error("the line from the cloud LB box crosses the data-path heading")
	}
	checkJapanese(t, b)
	checkMapJapanese(t, b)

	// Opened again, the page gets the trace from the snapshot.
	b.do(t, "opening the page again", chromedp.Navigate(l.page+"/?lang=ja"))
	b.waitFor(t, "the live state", q("conn-status")+`.dataset.state === "live" && window.ccmlab.store.epoch !== "" && window.ccmlab.stats.renderedMessages === window.ccmlab.store.messages`, 30*time.Second)
	b.waitFor(t, "the same trace on the data path", shown, 30*time.Second)
	checkJapanese(t, b)
	b.check(t)
}

// checkJapanese fails for any text of the flow, node and trace regions of
// the Japanese page that is not a Japanese sentence (names kept).
func checkJapanese(t *testing.T, b *browser) {
	t.Helper()
	texts := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="svc-strip"] .step-evidence, [data-testid="node-timeline"] .step-evidence, [data-testid="svc-stuck"] .stuck-message, [data-testid="node-stuck"] .stuck-message, [data-testid="trace-summary"], [data-testid="trace-result"] .hops-list li, [data-testid="trace-caption"], [data-testid="diagram"] .hop title')].map((e) => e.textContent).filter((s) => s.trim() !== "")`)
	if len(texts) < 8 {
		t.Errorf("only %d texts to check: %q", len(texts), texts)
	}
	for _, s := range texts {
		// Values filled into the texts are names (Pods, nodes, IDs, DNS
		// names, addresses, taint keys): tokens with a digit or
		// punctuation in them stand for themselves, as placeholders do in
		// the catalog tests.
		if why := i18n.NotJapanese(identifier.ReplaceAllString(s, "X")); why != "" {
			t.Errorf("English on the Japanese page: %q: %s", s, why)
		}
	}
}

var identifier = regexp.MustCompile(`[^\s、。]*[/.:=_\-0-9][^\s、。]*`)

// checkMapJapanese fails for an English phrase anywhere on the map of the
// Japanese page or in its text alternative. Short labels (an instance ID,
// "ON") need no Japanese script (one is added before the check);
// controller names are kept as they are.
func checkMapJapanese(t *testing.T, b *browser) {
	t.Helper()
	texts := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="cloud-map"] text, [data-testid="cloud-map"] title, [data-testid="map-text"] li, [data-testid="map-legend"]')].map((e) => e.textContent).filter((s) => s.trim() !== "")`)
	if len(texts) < 10 {
		t.Errorf("only %d map texts to check: %q", len(texts), texts)
	}
	for _, s := range texts {
		if why := i18n.NotJapanese(identifier.ReplaceAllString(s, "X")+" あ", "NodeLifecycle controller"); why != "" {
			t.Errorf("English on the Japanese page's map: %q: %s", s, why)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func itoa(n int) string { return strconv.Itoa(n) }

// jsList is a JS array literal of n strings.
func jsList[T any](items []T, at func(int) string) string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = at(i)
	}
	b, _ := json.Marshal(out)
	return string(b)
}
