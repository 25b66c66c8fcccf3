package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ccmlab/ccmlab/web"
)

// pickExercise opens an exercise in the panel.
func pickExercise(t *testing.T, b *browser, id string) {
	t.Helper()
	b.waitFor(t, "the exercise list", q("ex-pick-"+id), 20*time.Second)
	b.click(t, "ex-pick-"+id)
	b.waitFor(t, id+" open", q("ex-detail")+`.dataset.exercise === `+js(id)+` && !`+q("ex-detail")+`.hidden`, 15*time.Second)
}

// resetExercise presses reset twice and waits for it.
func resetExercise(t *testing.T, b *browser, lang web.Lang) {
	t.Helper()
	b.click(t, "ex-reset")
	b.waitFor(t, "reset armed", q("ex-reset")+`.dataset.armed === "true"`, 5*time.Second)
	b.click(t, "ex-reset")
	b.waitFor(t, "reset done", `window.ccmlab.exercises.busy === "" && `+q("ex-status")+`.textContent === `+js(web.T(lang, "ex.reset.done")), 120*time.Second)
}

// waitPassed waits for a step to show passed, pressing "check now" now and
// then (the lab also checks by itself).
func waitPassed(t *testing.T, b *browser, step string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for stepStatus(t, b, step) != "passed" {
		if time.Now().After(deadline) {
			b.dump(t)
			t.Fatalf("step %s still %s after %s; the panel says:\n%s", step, stepStatus(t, b, step), timeout,
				eval[string](t, b, q("ex-step-"+step)+`.innerText`))
		}
		if eval[bool](t, b, `!`+q("ex-check")+`.disabled`) {
			b.click(t, "ex-check")
		}
		time.Sleep(1500 * time.Millisecond)
	}
	t.Logf("step %s passed", step)
}

// setSelect chooses a value in a <select> the way a user does.
func setSelect(t *testing.T, b *browser, testid, value string) {
	t.Helper()
	if !eval[bool](t, b, `(() => { const s = `+q(testid)+`; if (![...s.options].some((o) => o.value === `+js(value)+`)) return false; s.value = `+js(value)+`; s.dispatchEvent(new Event("change", { bubbles: true })); return true; })()`) {
		t.Fatalf("%s has no option %q", testid, value)
	}
}

// TestMysteryThroughThePage: the instructor plants a cause from the page,
// the student names it in the challenge box and fixes it with the page's
// switch and request button alone.
func TestMysteryThroughThePage(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "en")

	pickExercise(t, b, "mystery-pending")
	b.waitFor(t, "the challenge box", q("mx-box")+` && !`+q("mx-box")+`.hidden && `+q("mx-plant")+` !== null`, 10*time.Second)
	setSelect(t, b, "mx-plant", "no-service-controller")
	resetExercise(t, b, web.EN)
	if svc := eval[string](t, b, q("mx-service")+`.textContent`); !strings.Contains(svc, "default/shop") {
		t.Errorf("the box names %q", svc)
	}
	// Nothing of the hidden cause is on the page before it is named.
	if eval[bool](t, b, q("mx-result")+` !== null || `+q("mx-cause")+` !== null`) {
		t.Fatal("the cause shows before it was named")
	}
	if st := stepStatus(t, b, "name-cause"); st == "passed" {
		t.Fatalf("name-cause is %s right after the reset", st)
	}
	// The strip says what is seen, not the cause's name.
	b.waitFor(t, "the strip's symptom", q("svc-stuck")+` && !`+q("svc-stuck")+`.hidden && `+q("svc-stuck")+`.dataset.reason === "symptom"`, 30*time.Second)
	if txt := eval[string](t, b, q("svc-stuck")+`.textContent`); strings.Contains(txt, "Service controller") {
		t.Errorf("during the challenge the strip names the cause: %q", txt)
	}

	// A wrong cause, first: only the first answer counts, so the
	// diagnosis is over: the verdict says wrong, the hidden cause and its
	// reasoning show, and name-cause passes (an answer was given).
	b.click(t, "mx-cause-iam-deny")
	b.waitFor(t, "name enabled", `!`+q("mx-name")+`.disabled`, 5*time.Second)
	b.click(t, "mx-name")
	b.waitFor(t, "the wrong verdict and the cause shown", q("mx-result")+` !== null && `+q("mx-result")+`.dataset.correct === "false" && `+q("mx-cause")+` !== null`, 15*time.Second)
	waitPassed(t, b, "name-cause", 20*time.Second)
	// No second answer is offered.
	if eval[bool](t, b, q("mx-name")+` !== null && !`+q("mx-name")+`.disabled`) {
		t.Error("a second answer is offered after the first")
	}
	// Once named, the strip names the reason again.
	b.waitFor(t, "the strip's reason", q("svc-stuck")+`.dataset.reason === "no-service-controller"`, 15*time.Second)

	// The fix: the Service controller's switch, then a request from the page.
	sw := "ctrl-switch-service"
	b.waitFor(t, "the Service controller off", settled(sw, false), 10*time.Second)
	b.click(t, sw)
	b.waitFor(t, "the Service controller on", settled(sw, true), switchWait)
	b.waitFor(t, "shop's EXTERNAL-IP on the page", q("svc-row-default/shop")+` && `+q("svc-row-default/shop")+`.querySelector('[data-testid="svc-external-ip"]').textContent.includes("elb")`, 60*time.Second)
	setSelect(t, b, "flow-service-select", "default/shop")
	setSelect(t, b, "send-kind", "loadbalancer")
	deadline := time.Now().Add(60 * time.Second)
	for stepStatus(t, b, "fix") != "passed" {
		if time.Now().After(deadline) {
			b.dump(t)
			t.Fatalf("fix still %s", stepStatus(t, b, "fix"))
		}
		b.waitFor(t, "send enabled", `!`+q("send-request")+`.disabled`, 30*time.Second)
		b.click(t, "send-request")
		time.Sleep(2 * time.Second)
		if eval[bool](t, b, `!`+q("ex-check")+`.disabled`) {
			b.click(t, "ex-check")
		}
	}
	b.waitFor(t, "the badge done", q("ex-badge-mystery-pending")+`.dataset.state === "done"`, 15*time.Second)
	b.check(t)
}

// TestDeleteFinalizerThroughThePage: a new lesson done with the page's
// console and switch alone.
func TestDeleteFinalizerThroughThePage(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "ja")
	const id = "delete-finalizer"
	pickExercise(t, b, id)
	resetExercise(t, b, web.JA)

	for _, line := range []string{"kubectl create deployment fin --image=nginx:1.29 --port=80", "kubectl expose deployment fin --type=LoadBalancer --port=80"} {
		if st, out := consoleRun(t, b, line); st != "ok" {
			t.Fatalf("%s: %s %q", line, st, out)
		}
	}
	waitPassed(t, b, "finalizer", 60*time.Second)

	sw := "ctrl-switch-service"
	b.click(t, sw)
	b.waitFor(t, "the Service controller off", settled(sw, false), switchWait)
	if st, out := consoleRun(t, b, "kubectl delete svc fin --wait=false"); st != "ok" {
		t.Fatalf("delete: %s %q", st, out)
	}
	waitPassed(t, b, "terminating", 60*time.Second)
	if st, out := consoleRun(t, b, "kubectl get svc fin"); st != "ok" || !strings.Contains(out, "fin") {
		t.Errorf("the Terminating Service: %s %q", st, out)
	}

	b.click(t, sw)
	b.waitFor(t, "the Service controller on", settled(sw, true), switchWait)
	waitPassed(t, b, "cleanup", 60*time.Second)
	b.waitFor(t, "the badge done", q("ex-badge-"+id)+`.dataset.state === "done"`, 15*time.Second)
	b.check(t)
}

// TestKubevirtHandsOnThroughThePage: the chapter's hands-on in a kubevirt
// lab (no Service controller), done with the page's console, answer box
// and request panel: the CCM is not in the tenant but in the management
// cluster (`ccmlab kubectl --infra`), whose Lease's HOLDER is the answer;
// EXTERNAL-IP stays <pending>; the NodePort answers.
func TestKubevirtHandsOnThroughThePage(t *testing.T) {
	needChromium(t)
	l := startLab(t, "--profile", "kubevirt")
	b := openPage(t, l, "en")
	const id = "kubevirt-handson"
	pickExercise(t, b, id)
	resetExercise(t, b, web.EN)
	if eval[bool](t, b, q("ctrl-switch-service")+` !== null`) {
		t.Error("a kubevirt lab shows a Service controller switch")
	}
	// The map frames the CCM as the management cluster's and tells each
	// VM's VMI.
	b.waitFor(t, "the management cluster on the map", q("map-mgmt")+` !== null && `+q("map-mgmt")+`.textContent.includes("outside the tenant") && `+
		q("map-mgmt-ccm")+`.textContent === "kubevirt-cloud-controller-manager 1/1" && `+
		`document.querySelectorAll('[data-testid^="map-inst-"][data-vmi="Running"]').length === 4`, 30*time.Second)
	if st, out := consoleRun(t, b, "kubectl get node -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.providerID}{\"\\n\"}{end}'"); st != "ok" || !strings.Contains(out, "kubevirt://tenant-") {
		t.Errorf("providerIDs: %s %q", st, out)
	}
	// The CCM is not in the tenant; the management cluster has its
	// Deployment, its Lease and one VMI per Node.
	if st, out := consoleRun(t, b, "kubectl get pods,leases -A"); st != "ok" || strings.Contains(out, "cloud-controller-manager") {
		t.Errorf("the tenant shows the CCM: %s %q", st, out)
	}
	st, out := consoleRun(t, b, "ccmlab kubectl --infra get deploy,lease,vmi -A")
	if st != "ok" {
		t.Fatalf("the management side: %s %q", st, out)
	}
	var holder string
	for _, ln := range strings.Split(out, "\n") {
		if f := strings.Fields(ln); len(f) == 4 && f[1] == "lease.coordination.k8s.io/cloud-controller-manager" {
			holder = f[2]
		}
	}
	for _, want := range []string{"deployment.apps/kubevirt-cloud-controller-manager", "virtualmachineinstance.kubevirt.io/tenant-"} {
		if !strings.Contains(out, want) {
			t.Errorf("the management side lacks %s:\n%s", want, out)
		}
	}
	if holder == "" {
		t.Fatalf("no CCM Lease on the management side:\n%s", out)
	}
	b.waitFor(t, "the answer box", q("ex-answer-input-management")+` !== null`, 30*time.Second)
	b.do(t, "typing the HOLDER", chromedp.SendKeys(chromedp.CSS(sel("ex-answer-input-management")), holder+kb.Enter, chromedp.NodeVisible))
	waitPassed(t, b, "management", 30*time.Second)

	for _, line := range []string{"kubectl create deployment web --image=nginx:1.29 --port=80", "kubectl expose deployment web --type=LoadBalancer --port=80"} {
		if st, out := consoleRun(t, b, line); st != "ok" {
			t.Fatalf("%s: %s %q", line, st, out)
		}
	}
	waitPassed(t, b, "expose", 60*time.Second)
	if st, out := consoleRun(t, b, "kubectl get svc web"); st != "ok" || !strings.Contains(out, "<pending>") {
		t.Errorf("kubectl get svc web: %s %q", st, out)
	}

	b.waitFor(t, "web in the request panel", `[...`+q("flow-service-select")+`.options].some((o) => o.value === "default/web")`, 30*time.Second)
	setSelect(t, b, "flow-service-select", "default/web")
	setSelect(t, b, "send-kind", "nodeport")
	deadline := time.Now().Add(60 * time.Second)
	for stepStatus(t, b, "nodeport") != "passed" {
		if time.Now().After(deadline) {
			b.dump(t)
			t.Fatalf("nodeport still %s", stepStatus(t, b, "nodeport"))
		}
		b.waitFor(t, "send enabled", `!`+q("send-request")+`.disabled`, 30*time.Second)
		b.click(t, "send-request")
		time.Sleep(2 * time.Second)
		if eval[bool](t, b, `!`+q("ex-check")+`.disabled`) {
			b.click(t, "ex-check")
		}
	}
	b.waitFor(t, "the badge done", q("ex-badge-"+id)+`.dataset.state === "done"`, 15*time.Second)
	b.check(t)
}
