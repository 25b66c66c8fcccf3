package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/server/stream"
)

// mapPlacement is a JS expression listing, for every instance box on the
// map, its instance, the zone it says it is in, and whether the box lies
// inside that zone's column.
const mapPlacement = `[...document.querySelectorAll('[data-testid="cloud-map"] .map-inst')].map((g) => {
	const zone = document.querySelector('[data-testid="cloud-map"] [data-zone="' + g.dataset.zone + '"].map-zone rect');
	const b = g.getBoundingClientRect(), z = zone ? zone.getBoundingClientRect() : null;
	return { id: g.dataset.id, zone: g.dataset.zone, state: g.dataset.state,
		inside: !!z && b.left >= z.left - 1 && b.right <= z.right + 1 && b.top >= z.top - 1 && b.bottom <= z.bottom + 1 };
})`

type placed struct {
	ID     string `json:"id"`
	Zone   string `json:"zone"`
	State  string `json:"state"`
	Inside bool   `json:"inside"`
}

// TestMapAtClassSize: 50 nodes and 200 Pods over three zones, from the
// fake stream: every instance is drawn inside its zone's column, Pods are
// counted per instance, the text alternative lists every instance, and a
// target turning unhealthy changes its line's state (with a glyph, not
// colour alone). A screenshot of the crowded map goes to artifacts/.
func TestMapAtClassSize(t *testing.T) {
	needChromium(t)
	w := bigWorld(50, 200, 3)
	f := newFakeLab(t, w)
	b := openFake(t, f, "?lang=en")
	b.waitFor(t, "50 instances on the map", `document.querySelectorAll('[data-testid="cloud-map"] .map-inst').length === 50`, 20*time.Second)

	got := eval[[]placed](t, b, mapPlacement)
	zoneOf := map[string]string{}
	for _, in := range w.insts {
		zoneOf[in.ID] = in.Zone
	}
	for _, p := range got {
		if p.Zone != zoneOf[p.ID] || !p.Inside {
			t.Errorf("instance %s drawn in zone %q (inside its column: %v), want zone %q", p.ID, p.Zone, p.Inside, zoneOf[p.ID])
		}
		if p.State != "ready" {
			t.Errorf("instance %s state %q, want ready", p.ID, p.State)
		}
	}
	if n := eval[int](t, b, `document.querySelectorAll('[data-testid="cloud-map"] .map-zone').length`); n != 3 {
		t.Errorf("%d zone columns, want 3", n)
	}
	// 200 Pods over 50 nodes: four each, shown as a count.
	counts := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="cloud-map"] [data-testid="map-inst-pods"]')].map((e) => e.dataset.count)`)
	for _, c := range counts {
		if c != "4" {
			t.Errorf("an instance shows %s Pods, want 4", c)
			break
		}
	}
	if n := eval[int](t, b, q("map-text")+`.children.length`); n < 50 {
		t.Errorf("the map's text alternative has %d lines, want every instance", n)
	}

	// Three load balancers with 50 targets each: on a crowded map one line
	// per zone says how many targets there are healthy, and every
	// instance box shows each load balancer's view of it.
	b.waitFor(t, "9 healthy zone lines", `document.querySelectorAll('[data-testid="map-lb-zone-line"][data-health="healthy"]').length === 9`, 10*time.Second)
	lb := w.lbs[0]
	lb.Targets = append([]cloud.Target(nil), lb.Targets...)
	lb.Targets[0].Health = cloud.TargetUnhealthy
	lb.Targets[0].Reason = "Target.Timeout"
	f.publish(stream.LoadBalancerChange{Kind: stream.KindLoadBalancer, Op: stream.OpUpsert, ID: lb.Name, Object: &lb})
	zone := zoneOf[lb.Targets[0].ID]
	line := `document.querySelector('[data-testid="map-lb-zone-line"][data-lb="` + lb.Name + `"][data-zone="` + zone + `"]')`
	b.waitFor(t, "the zone's line unhealthy, with its glyph", line+`.dataset.health === "unhealthy" && `+line+`.querySelector("text").textContent.startsWith("✗ ")`, 10*time.Second)
	marks := eval[string](t, b, q("map-inst-"+lb.Targets[0].ID)+`.querySelector('[data-testid="map-inst-taint"]').dataset.marks`)
	if marks != "✗✓✓" {
		t.Errorf("the unhealthy target's box shows %q, want ✗✓✓ (one glyph per load balancer)", marks)
	}

	// The keyboard reaches the map's text alternative (and opens it), with
	// the presenter switch on the way.
	reached := map[string]bool{}
	for i := 0; i < 80 && !reached["map-text"]; i++ {
		b.do(t, "pressing Tab", chromedp.KeyEvent(kb.Tab))
		id := eval[string](t, b, `(() => { const e = document.activeElement; return e.dataset.testid || (e.closest(".map-text-box") ? "map-text" : e.tagName); })()`)
		reached[id] = true
	}
	if !reached["presenter-toggle"] || !reached["map-text"] {
		t.Fatalf("Tab did not reach the presenter switch and the map's text: reached %v", reached)
	}
	b.do(t, "pressing Enter", chromedp.KeyEvent(kb.Enter))
	b.waitFor(t, "the map as text open", `document.querySelector(".map-text-box").open && `+q("map-text")+`.offsetParent !== null`, 5*time.Second)

	saveScreenshotOf(t, b, "cloud-map", "map-50-nodes.png")
	b.check(t)
}

// BenchmarkMapRender measures drawing the map of 50 nodes and 200 Pods (3
// load balancers of 50 targets, 50 routes) inside the page: cold, from an
// empty drawing, and an update where every node changed state.
func BenchmarkMapRender(b *testing.B) {
	needChromium(b)
	w := bigWorld(50, 200, 3)
	for i, n := range w.nodes {
		w.routes = append(w.routes, cloud.Route{DestinationCIDR: n.PodCIDR, InstanceID: w.insts[i].ID, State: "active"})
	}
	f := newFakeLab(b, w)
	br := openFake(b, f, "?lang=en")
	br.waitFor(b, "50 instances on the map", `document.querySelectorAll('[data-testid="cloud-map"] .map-inst').length === 50`, 20*time.Second)
	const round = `(() => {
		const c = window.ccmlab;
		c.resetMap();
		c.store.dirty.add("cluster");
		c.renderNow();
		const cold = c.stats.lastMapMs;
		for (const n of c.store.nodes.values()) {
			const taints = n.taints.length ? [] : ["node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"];
			c.store.nodes.set(n.name, { ...n, taints });
		}
		c.store.dirty.add("cluster");
		c.renderNow();
		return [cold, c.stats.lastMapMs];
	})()`
	var cold, warm float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := eval[[]float64](b, br, round)
		cold += r[0]
		warm += r[1]
	}
	b.ReportMetric(cold/float64(b.N), "ms/map-cold")
	b.ReportMetric(warm/float64(b.N), "ms/map-update")
}

// saveScreenshotOf writes a picture of one element (by data-testid) to
// artifacts/.
func saveScreenshotOf(t testing.TB, b *browser, testid, name string) string {
	t.Helper()
	return writeShot(t, b, name, "screenshot of "+testid, chromedp.Screenshot(chromedp.CSS(sel(testid)), chromedp.NodeVisible))
}
