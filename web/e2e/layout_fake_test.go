package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

// laptopWorld is a small lab in the middle of things: a Service whose
// flow waits on step 3 with a refused call (the longest stuck texts), one
// whose six steps are done (the longest evidence: an ELB host name, the
// AWS calls of step 4), a control-plane instance, a load balancer of
// each, a route per node and a long call log.
func laptopWorld() *world {
	w := bigWorld(3, 6, 2)
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	cp := cloud.Instance{
		ID: "i-00000000000c0ffee", Name: "ip-10-0-0-2.ap-northeast-1.compute.internal", PrivateDNSName: "ip-10-0-0-2.ap-northeast-1.compute.internal",
		Zone: "ap-northeast-1a", InstanceType: "m5.large", PrivateIP: "10.0.0.2", State: cloud.InstanceRunning, LaunchTime: t0,
		Tags: map[string]string{"k8s.io/role/control-plane": "1"},
	}
	w.insts = append(w.insts, cp)
	for i, n := range w.nodes {
		w.routes = append(w.routes, cloud.Route{DestinationCIDR: n.PodCIDR, InstanceID: w.insts[i].ID, State: "active"})
	}
	ev := func(s *flow.Step, at time.Time, key string, args i18n.Args) {
		s.Status, s.At, s.EvidenceKey, s.EvidenceArgs = flow.StepDone, at, key, args
		s.Evidence = flowtext.English(i18n.Msg{Key: key, Args: args})
	}
	// web-1 (the newest, shown first): done up to step 2, stuck on 3.
	waiting := &w.sflows[1]
	waiting.Step = 2
	for i := range waiting.Steps {
		waiting.Steps[i] = flow.Step{N: i + 1, Key: waiting.Steps[i].Key, Status: flow.StepPending}
	}
	ev(&waiting.Steps[0], t0, flowtext.ServiceStored, i18n.Args{"ip": "10.96.0.11", "ports": "80:30001/TCP,443:31001/TCP"})
	ev(&waiting.Steps[1], t0.Add(1200*time.Millisecond), flowtext.CallAPI, i18n.Args{"api": "elb", "action": "DescribeLoadBalancers", "caller": "cloud-controller-manager"})
	waiting.Steps[2].Status = flow.StepStuck
	waiting.Stuck = &flow.Stuck{Reason: flow.ReasonCloudError, MessageKey: flowtext.StuckCloudRefused,
		MessageArgs: i18n.Args{"action": "CreateLoadBalancer", "error": "AccessDenied: User: arn:aws:iam::000000000000:user/cloud-controller-manager is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"}}
	waiting.Stuck.Message = flowtext.English(i18n.Msg{Key: waiting.Stuck.MessageKey, Args: waiting.Stuck.MessageArgs})
	w.services[1].ExternalIP, w.services[1].Ingress = "<pending>", []string{}
	w.services[1].Ports = "80:30001/TCP,443:31001/TCP"
	// web-0: all six done.
	done := &w.sflows[0]
	host := w.lbs[0].DNSName
	ev(&done.Steps[0], t0, flowtext.ServiceStored, i18n.Args{"ip": "10.96.0.10", "ports": "80:30000/TCP"})
	ev(&done.Steps[1], t0.Add(time.Second), flowtext.Event, i18n.Args{"reason": "EnsuringLoadBalancer", "source": "service-controller"})
	ev(&done.Steps[2], t0.Add(1500*time.Millisecond), flowtext.CallAPI, i18n.Args{"api": "elb", "action": "CreateLoadBalancer", "caller": "cloud-controller-manager"})
	ev(&done.Steps[3], t0.Add(2100*time.Millisecond), flowtext.TargetsAWS, i18n.Args{"n": "3", "hc": "TCP:30000", "api": "elb", "actions": "RegisterInstancesWithLoadBalancer + ConfigureHealthCheck"})
	ev(&done.Steps[4], t0.Add(3*time.Second), flowtext.IngressEvent, i18n.Args{"ingress": host, "reason": "EnsuredLoadBalancer"})
	ev(&done.Steps[5], t0.Add(48*time.Second), flowtext.Answered, i18n.Args{"id": "t-000000000042", "status": "200"})
	done.Step = 6
	for i := range 60 {
		w.calls = append(w.calls, cloud.Call{Seq: uint64(300 + i), Time: t0, Service: cloud.ServiceELB, Action: "CreateLoadBalancer", Caller: "cloud-controller-manager",
			Request: "LoadBalancerName=a0000000000000000000000000000001 Listeners=[TCP:80->30001]", Result: "AccessDenied: not authorized to perform: elasticloadbalancing:CreateLoadBalancer",
			Error: "AccessDenied", State: cloud.CallDone})
	}
	return w
}

// layoutProblems is a JS expression listing what does not fit: for every
// six-step card (the Service strip and the node timeline), a card whose
// content is wider or taller than its box, a part of it that sticks out
// of the card or is cut inside itself, and two cards that overlap.
const layoutProblems = `(() => {
	const out = [];
	const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
	for (const list of document.querySelectorAll('[data-testid="svc-strip"], [data-testid="node-timeline"]')) {
		if (list.offsetParent === null) continue;
		const cards = [...list.children].filter((li) => li.offsetParent !== null);
		cards.forEach((li, i) => {
			const name = list.dataset.testid + "/" + (li.dataset.key || i);
			const box = li.getBoundingClientRect();
			if (li.scrollWidth > li.clientWidth + 1 || li.scrollHeight > li.clientHeight + 1) out.push(name + ": content " + li.scrollWidth + "x" + li.scrollHeight + " in a box of " + li.clientWidth + "x" + li.clientHeight);
			for (const part of li.children) {
				if (part.offsetParent === null || part.textContent === "") continue;
				const r = part.getBoundingClientRect();
				if (!inside(r, box)) out.push(name + ": ." + part.className + " (" + Math.round(r.left) + "-" + Math.round(r.right) + ") outside its card (" + Math.round(box.left) + "-" + Math.round(box.right) + ")");
				if (part.scrollWidth > part.clientWidth + 1 && getComputedStyle(part).display !== "inline") out.push(name + ": ." + part.className + " cut (" + part.scrollWidth + " > " + part.clientWidth + ")");
			}
			cards.slice(i + 1).forEach((other, j) => {
				const o = other.getBoundingClientRect();
				if (box.left < o.right - 1 && o.left < box.right - 1 && box.top < o.bottom - 1 && o.top < box.bottom - 1) out.push(name + " overlaps card " + (i + j + 2));
			});
		});
	}
	return out;
})()`

// columnsCut is a JS expression listing the visible table columns (by
// their heading) that lie outside what their scrolling box shows.
const columnsCut = `((ids) => {
	const out = [];
	for (const id of ids) {
		const body = document.querySelector('[data-testid="' + id + '"]');
		if (!body || body.offsetParent === null) continue;
		const scroller = body.closest(".scroll");
		const view = scroller.getBoundingClientRect();
		for (const th of body.closest("table").querySelectorAll("thead th")) {
			const r = th.getBoundingClientRect();
			if (r.right > view.right + 1) out.push(id + ": " + th.textContent + " ends at " + Math.round(r.right) + ", its box at " + Math.round(view.right));
		}
	}
	return out;
})`

// TestPageAtLaptopSizes: at 1280x720 and 1440x900, in both languages,
// normal and in presenter mode, with one flow stuck and one done: no text
// of a six-step card leaves its card or is cut, no card overlaps
// another, the done steps' times rise from step to step; outside
// presenter mode the console is wide enough for kubectl get svc's
// EXTERNAL-IP column and the exercise panel tall enough to read, the
// node table's POD-CIDR and the call log's RESULT columns are in view,
// and the control-plane instance cannot be terminated from the page.
// Screenshots go to artifacts/.
func TestPageAtLaptopSizes(t *testing.T) {
	needChromium(t)
	w := laptopWorld()
	f := newFakeLab(t, w)
	for _, size := range [][2]int64{{1280, 720}, {1440, 900}} {
		for _, lang := range []string{"en", "ja"} {
			for _, presenter := range []bool{false, true} {
				name := fmt.Sprintf("%dx%d-%s", size[0], size[1], lang)
				if presenter {
					name += "-presenter"
				}
				t.Run(name, func(t *testing.T) {
					query := "?lang=" + lang + "&presenter=0"
					if presenter {
						query = "?lang=" + lang + "&presenter=1"
					}
					b := newBrowser(t, needChromium(t), f.srv.URL)
					b.do(t, "opening the page at "+name, chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(f.srv.URL+"/"+query))
					b.waitFor(t, "the live state drawn", q("conn-status")+`.dataset.state === "live" && window.ccmlab.stats.renderedMessages === window.ccmlab.store.messages && document.querySelectorAll('[data-testid="svc-strip"] li').length === 6`, 20*time.Second)
					for _, svc := range []string{"default/web-1", "default/web-0"} {
						b.do(t, "choosing "+svc, chromedp.SetValue(chromedp.CSS(sel("flow-service-select")), svc))
						eval[bool](t, b, q("flow-service-select")+`.dispatchEvent(new Event("change", { bubbles: true }))`)
						b.waitFor(t, svc+" drawn", q("svc-step-count")+`.dataset.step === `+js(map[string]string{"default/web-1": "2", "default/web-0": "6"}[svc]), 10*time.Second)
						if bad := eval[[]string](t, b, layoutProblems); len(bad) > 0 {
							saveViewport(t, b, "layout-"+name+".png")
							t.Errorf("%s: %s", svc, strings.Join(bad, "\n"))
						}
					}
					times := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="svc-strip"] .step-evidence')].map((e) => e.textContent)`)
					last := -1.0
					for i, s := range times {
						var at float64
						if j := strings.LastIndex(s, "+"); j >= 0 {
							fmt.Sscanf(s[j+1:], "%g", &at)
						}
						if at < last {
							t.Errorf("step %d at +%g s after step %d at +%g s: %q", i+1, at, i, last, times)
						}
						last = at
					}
					saveViewport(t, b, "layout-"+name+".png")
					if presenter {
						return
					}
					if bad := eval[[]string](t, b, columnsCut+`(["nodes", "calls", "instances", "routes"])`); len(bad) > 0 {
						t.Errorf("columns cut:\n%s", strings.Join(bad, "\n"))
					}
					// kubectl get svc's lines are about 130 characters with an
					// ELB host name: the console shows them whole.
					chars := eval[float64](t, b, `(() => {
	const out = `+q("console-output")+`;
	const probe = document.createElement("span");
	probe.className = "console-out";
	probe.textContent = "x".repeat(100);
	out.append(probe);
	const w = probe.getBoundingClientRect().width / 100;
	probe.remove();
	return out.clientWidth / w;
})()`)
					if chars < 130 {
						t.Errorf("the console shows %.0f characters a line, want 130 (kubectl get svc with an ELB's name)", chars)
					}
					// Scrolled to the top and to the bottom: the panel ends
					// above the docked console and keeps half the window.
					for _, y := range []string{"0", "document.body.scrollHeight"} {
						eval[bool](t, b, `(() => { window.scrollTo(0, `+y+`); return true; })()`)
						fitted := `(() => { const a = ` + q("ex-panel") + `.getBoundingClientRect(); return [parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--aside-top") || "0"), a.top, window.scrollY, document.body.scrollHeight]; })()`
						var got []float64
						for range 50 {
							if got = eval[[]float64](t, b, fitted); got[0] == max(0, float64(int(got[1]+0.5))) {
								break
							}
							time.Sleep(100 * time.Millisecond)
						}
						if got[0] != max(0, float64(int(got[1]+0.5))) {
							t.Errorf("scrolled to %s: --aside-top %v, the panel's top at %v (scrollY %v of %v)", y, got[0], got[1], got[2], got[3])
						}
						panel := eval[[]float64](t, b, `(() => { const e = `+q("ex-panel")+`.querySelector(".ex").getBoundingClientRect(); return [e.height, e.bottom, `+q("console")+`.getBoundingClientRect().top]; })()`)
						if min := 0.5 * float64(size[1]); panel[0] < min {
							t.Errorf("scrolled to %s: the exercise panel is %.0f px tall, want %.0f", y, panel[0], min)
						}
						if panel[1] > panel[2]+1 {
							t.Errorf("scrolled to %s: the exercise panel ends at %.0f, behind the console (from %.0f)", y, panel[1], panel[2])
						}
					}
					lines := eval[float64](t, b, q("console-output")+`.clientHeight / parseFloat(getComputedStyle(`+q("console-output")+`).lineHeight || "17")`)
					if lines < 5 {
						t.Errorf("the console's output shows %.1f lines, want 5", lines)
					}
					if eval[bool](t, b, q("console")+`.getBoundingClientRect().bottom > window.innerHeight + 1 || `+q("console-input")+`.getBoundingClientRect().bottom > window.innerHeight + 1`) {
						t.Error("the console's input is below the window")
					}
					// A load balancer on the map is named by its Service.
					lb := w.lbs[0].Name
					if got := eval[string](t, b, q("map-lb-"+lb)+`.dataset.service + " " + `+q("map-lb-"+lb)+`.querySelector(".map-lb-name").textContent`); got != "default/web-0 ⇄ web-0" {
						t.Errorf("the map's load balancer %s: %q, want it named by its Service web-0", lb, got)
					}
					if !eval[bool](t, b, q("inst-terminate-i-00000000000c0ffee")+`.disabled`) {
						t.Error("Terminate is enabled on the control-plane instance")
					}
					if eval[bool](t, b, q("inst-terminate-"+fmt.Sprintf("i-%017x", 0xabc000))+`.disabled`) {
						t.Error("Terminate is disabled on a worker instance")
					}
					b.check(t)
				})
			}
		}
	}
}

// saveViewport writes what the window shows (fixed parts where they
// sit) to artifacts/.
func saveViewport(t testing.TB, b *browser, name string) {
	t.Helper()
	writeShot(t, b, name, "screenshot", chromedp.CaptureScreenshot())
}

// TestPresenterFollowsURL: the URL decides presenter mode before what the
// browser remembers: ?presenter=0 opens the normal page after presenter
// mode was used, and the page without the parameter opens as last left.
func TestPresenterFollowsURL(t *testing.T) {
	needChromium(t)
	f := newFakeLab(t, bigWorld(3, 6, 1))
	b := openFake(t, f, "?lang=en&presenter=1")
	isPresenter := `document.documentElement.classList.contains("presenter")`
	b.waitFor(t, "presenter mode from the URL", isPresenter, 10*time.Second)
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"?lang=en", true},              // remembered
		{"?lang=en&presenter=0", false}, // the URL wins
		{"?lang=en", false},             // and is remembered in turn
		{"?lang=en&presenter=1", true},
	} {
		b.do(t, "opening "+tc.query, chromedp.Navigate(f.srv.URL+"/"+tc.query))
		b.waitFor(t, "the page live", q("conn-status")+`.dataset.state === "live"`, 20*time.Second)
		if got := eval[bool](t, b, isPresenter); got != tc.want {
			t.Errorf("%s: presenter mode %v, want %v", tc.query, got, tc.want)
		}
	}
	b.check(t)
}
