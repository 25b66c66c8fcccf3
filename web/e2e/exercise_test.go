package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ccmlab/ccmlab/web"
)

const ex3 = "pending-on-purpose"

// consoleRun types line into the page's kubectl console, presses Enter and
// waits for the answer. It returns the entry's state (ok, failed, refused,
// error) and what the console printed.
func consoleRun(t *testing.T, b *browser, line string) (state, output string) {
	t.Helper()
	before := eval[int](t, b, `document.querySelectorAll('[data-testid="console-entry"]').length`)
	b.do(t, "typing "+line, chromedp.SendKeys(chromedp.CSS(sel("console-input")), line+kb.Enter, chromedp.NodeVisible))
	last := `[...document.querySelectorAll('[data-testid="console-entry"]')].at(-1)`
	b.waitFor(t, "the console's answer to "+line,
		`document.querySelectorAll('[data-testid="console-entry"]').length === `+strconv.Itoa(before+1)+` && `+last+`.dataset.command === `+js(line)+` && `+last+`.dataset.state !== "running"`, 40*time.Second)
	state = eval[string](t, b, last+`.dataset.state`)
	output = eval[string](t, b, last+`.querySelector(".console-out").textContent`)
	t.Logf("console $ %s -> %s\n%s", line, state, output)
	return state, output
}

// stepStatus is what the exercise panel shows for a step.
func stepStatus(t *testing.T, b *browser, step string) string {
	t.Helper()
	return eval[string](t, b, `(() => { const e = `+q("ex-step-"+step)+`; return e ? e.dataset.status : "missing"; })()`)
}

// checkNow presses "check now" once and waits for the verdict.
func checkNow(t *testing.T, b *browser) {
	t.Helper()
	b.waitFor(t, "check now enabled", `!`+q("ex-check")+`.disabled`, 90*time.Second)
	b.click(t, "ex-check")
	b.waitFor(t, "the check done", `window.ccmlab.exercises.busy === "" && window.ccmlab.exercises.reports[`+js(ex3)+`] !== undefined`, 60*time.Second)
}

// checkUntilPassed presses "check now" as a student would, again after a
// pause, until the step shows passed.
func checkUntilPassed(t *testing.T, b *browser, step string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		checkNow(t, b)
		st := stepStatus(t, b, step)
		if st == "passed" {
			t.Logf("step %s passed", step)
			return
		}
		if time.Now().After(deadline) {
			b.dump(t)
			t.Fatalf("step %s still %s after %s; the panel says:\n%s", step, st, timeout,
				eval[string](t, b, q("ex-step-"+step)+`.innerText`))
		}
		time.Sleep(1500 * time.Millisecond)
	}
}

// TestExercisePendingThroughThePage is issue 7's browser test: exercise 3
// ("<pending> on purpose") is completed with the page alone, the Service
// controller's switch and the kubectl console, pressing "check now" after
// every step until each one shows passed.
func TestExercisePendingThroughThePage(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "ja")

	b.waitFor(t, "the exercise list", q("ex-pick-"+ex3), 20*time.Second)
	b.click(t, "ex-pick-"+ex3)
	b.waitFor(t, "exercise 3 open", q("ex-detail")+`.dataset.exercise === `+js(ex3)+` && !`+q("ex-detail")+`.hidden`, 15*time.Second)
	if goal := eval[string](t, b, q("ex-goal")+`.textContent`); !strings.Contains(goal, "Service controller") {
		t.Errorf("the goal does not read like exercise 3: %q", goal)
	}

	// A fault injected beforehand: the reset clears it and says so.
	l.putJSON(t, "/api/cloud/faults", `{"deny":["CreateLoadBalancerPolicy"]}`)

	// Reset asks twice, then puts the lab back to the exercise's start.
	b.click(t, "ex-reset")
	b.waitFor(t, "reset armed", q("ex-reset")+`.dataset.armed === "true"`, 5*time.Second)
	b.click(t, "ex-reset")
	b.waitFor(t, "reset done", `window.ccmlab.exercises.busy === "" && `+q("ex-status")+`.textContent === `+js(web.T(web.JA, "ex.reset.done")), 120*time.Second)
	if st := stepStatus(t, b, "service-off"); st != "current" {
		t.Fatalf("after reset the first step is %s, want current", st)
	}
	// A reset that went through says what it did as a note, not a warning.
	shown, kind := eval[bool](t, b, `!`+q("ex-unavailable")+`.hidden`), eval[string](t, b, q("ex-unavailable")+`.dataset.kind || ""`)
	if text := eval[string](t, b, q("ex-unavailable")+`.textContent`); !shown || kind != "note" || !strings.Contains(text, "注入された障害") {
		t.Errorf("after a reset that cleared a fault, the box (shown %v) says %q as kind %q, want a note naming the faults", shown, text, kind)
	}

	// Doing nothing must not pass: the first check fails and says why.
	checkNow(t, b)
	if st := stepStatus(t, b, "service-off"); st != "failed" {
		t.Fatalf("with the Service controller on, step 1 is %s, want failed", st)
	}
	if n := eval[int](t, b, `document.querySelectorAll('[data-testid="ex-results-service-off"] [data-pass="false"]').length`); n == 0 {
		t.Error("a failed step shows no failing check")
	}
	if st := stepStatus(t, b, "expose"); st != "locked" {
		t.Errorf("step 2 is %s before step 1 passed, want locked", st)
	}
	// Hints come on demand, one at a time; the solution only after all.
	if eval[bool](t, b, q("ex-solution-service-off")+` !== null`) {
		t.Fatal("the solution shows before any hint")
	}
	b.click(t, "ex-hint-service-off")
	b.waitFor(t, "the hint shown", q("ex-hints-service-off")+` && `+q("ex-hints-service-off")+`.textContent.length > 10`, 5*time.Second)
	for i := 0; eval[bool](t, b, q("ex-hint-service-off")+` !== null`); i++ {
		if i > 10 {
			t.Fatal("the hints do not end")
		}
		b.click(t, "ex-hint-service-off")
		b.waitFor(t, "the next hint", `window.ccmlab.exercises.busy === ""`, 5*time.Second)
	}
	if eval[bool](t, b, q("ex-solution-service-off")+` !== null`) {
		t.Fatal("the solution shows before it was asked for")
	}
	b.click(t, "ex-show-solution-service-off")
	b.waitFor(t, "the solution shown", q("ex-solution-service-off")+` !== null`, 5*time.Second)

	// Step 1: the Service controller off, with the page's switch.
	sw := "ctrl-switch-service"
	b.waitFor(t, "the Service controller's switch on", settled(sw, true), 10*time.Second)
	b.click(t, sw)
	b.waitFor(t, "the Service controller off", settled(sw, false), switchWait)
	// The lab checks by itself: the step turns green without a click.
	b.waitFor(t, "step 1 passed by the lab's own check", `(() => { const e = `+q("ex-step-service-off")+`; return e && e.dataset.status === "passed"; })()`, 30*time.Second)
	b.waitFor(t, "the explanation after success", q("ex-explanation-service-off")+` !== null`, 5*time.Second)

	// Step 2: the chapter's commands in the page's console. The first one
	// is copied from the step by a click.
	create := "kubectl create deployment web --image=nginx:1.29 --port=80"
	b.do(t, "copying the create command", chromedp.Click(chromedp.CSS(`[data-testid="ex-step-expose"] [data-testid="ex-cmd"][data-line="`+create+`"]`), chromedp.NodeVisible))
	if v := eval[string](t, b, q("console-input")+`.value`); v != create {
		t.Fatalf("clicking the command put %q into the console", v)
	}
	if focused := eval[bool](t, b, `document.activeElement === `+q("console-input")); !focused {
		t.Error("the console's input does not have the focus after copying a command")
	}
	b.do(t, "pressing Enter", chromedp.SendKeys(chromedp.CSS(sel("console-input")), kb.Enter))
	b.waitFor(t, "the Deployment created", `(() => { const e = [...document.querySelectorAll('[data-testid="console-entry"]')].at(-1); return e && e.dataset.state === "ok" && e.textContent.includes("deployment.apps/web created"); })()`, 40*time.Second)

	if st, out := consoleRun(t, b, "kubectl expose deployment web --type=LoadBalancer --port=80"); st != "ok" || !strings.Contains(out, "service/web exposed") {
		t.Fatalf("kubectl expose: %s %q", st, out)
	}
	// The console refuses anything that is not plain kubectl, and says why.
	if st, out := consoleRun(t, b, "kubectl get svc; rm -rf /"); st != "refused" || len(out) < 10 {
		t.Errorf("a line with ; was %s: %q", st, out)
	}
	if st, _ := consoleRun(t, b, "ls /"); st != "refused" {
		t.Errorf("another program was %s, want refused", st)
	}
	// ↑ brings the last line back.
	b.do(t, "pressing up", chromedp.SendKeys(chromedp.CSS(sel("console-input")), kb.ArrowUp))
	if v := eval[string](t, b, q("console-input")+`.value`); v != "ls /" {
		t.Errorf("↑ recalled %q, want the last command", v)
	}
	b.do(t, "clearing the input with Esc", chromedp.SendKeys(chromedp.CSS(sel("console-input")), kb.Escape))
	if v := eval[string](t, b, q("console-input")+`.value`); v != "" {
		t.Errorf("Esc left %q in the console", v)
	}

	if st, out := consoleRun(t, b, "kubectl get svc web"); st != "ok" || !strings.Contains(out, "<pending>") {
		t.Errorf("kubectl get svc web: %s %q, want EXTERNAL-IP <pending>", st, out)
	}
	if st, out := consoleRun(t, b, "kubectl get svc web -o jsonpath='{.status}'"); st != "ok" || !strings.Contains(out, `{"loadBalancer":{}}`) {
		t.Errorf("the status: %s %q, want {\"loadBalancer\":{}}", st, out)
	}
	checkUntilPassed(t, b, "expose", 30*time.Second)

	// Step 3: ClusterIP and NodePort answer, to requests the student sends
	// from the page's request panel (the checker sends none).
	for _, kind := range []string{"clusterip", "nodeport"} {
		eval[bool](t, b, `(() => { const s = `+q("send-kind")+`; s.value = `+js(kind)+`; s.dispatchEvent(new Event("change", { bubbles: true })); return true; })()`)
		answered := `window.ccmlab.store.traces.some((x) => x.kind === ` + js(kind) + ` && x.status === 200 && x.origin === "api")`
		// A student sends again when a request fails (a young node's route
		// may still be missing).
		for i := 0; !eval[bool](t, b, answered); i++ {
			if i == 30 {
				t.Fatalf("no %s request answered 200", kind)
			}
			b.waitFor(t, "send enabled for "+kind, `!`+q("send-request")+`.disabled`, 60*time.Second)
			b.click(t, "send-request")
			b.waitFor(t, "the "+kind+" request traced", `window.ccmlab.store.traces.some((x) => x.kind === `+js(kind)+`) && !`+q("send-request")+`.disabled`, 30*time.Second)
			if !eval[bool](t, b, answered) {
				time.Sleep(time.Second)
			}
		}
	}
	checkUntilPassed(t, b, "still-answers", 60*time.Second)

	// Step 4: the Service controller back on, with the page's switch.
	b.click(t, sw)
	b.waitFor(t, "the Service controller on", settled(sw, true), switchWait)
	b.waitFor(t, "EXTERNAL-IP filled on the page", q("svc-row-default/web")+` && `+q("svc-row-default/web")+`.querySelector('[data-testid="svc-external-ip"]').textContent.includes("elb")`, 60*time.Second)
	if st, out := consoleRun(t, b, "kubectl describe svc web"); st != "ok" || !strings.Contains(out, "EnsuredLoadBalancer") {
		t.Errorf("kubectl describe svc web: %s %q, want the EnsuredLoadBalancer event", st, out)
	}
	// The last step asks for the EXTERNAL-IP read in the lab.
	ip := eval[string](t, b, q("svc-row-default/web")+`.querySelector('[data-testid="svc-external-ip"]').textContent.trim()`)
	b.waitFor(t, "the answer box", q("ex-answer-input-service-on")+` !== null`, 60*time.Second)
	b.do(t, "typing the EXTERNAL-IP", chromedp.SendKeys(chromedp.CSS(sel("ex-answer-input-service-on")), ip+kb.Enter, chromedp.NodeVisible))
	checkUntilPassed(t, b, "service-on", 60*time.Second)

	steps := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid="ex-steps"] > li')].map((e) => e.dataset.step + "=" + e.dataset.status)`)
	if len(steps) != 4 {
		t.Errorf("the panel shows %d steps, want 4: %v", len(steps), steps)
	}
	for _, s := range steps {
		if !strings.HasSuffix(s, "=passed") {
			t.Errorf("step %s, want every step passed", s)
		}
	}
	if got := eval[string](t, b, q("ex-status")+`.textContent`); got != web.T(web.JA, "ex.alldone") {
		t.Errorf("status after the last check = %q", got)
	}

	// The quiz: the first answer counts. Choices come in this lab's own
	// order, so the test does not know which is right: the first answer
	// shows every choice's reasoning and finishes the exercise, whatever
	// it was; a second try changes nothing.
	b.click(t, "ex-choice-who-writes-ingress-0")
	b.waitFor(t, "the answer explained", q("ex-q-who-writes-ingress")+`.dataset.answered === "true" && `+q("ex-why-who-writes-ingress-0")+` !== null && `+q("ex-why-who-writes-ingress-1")+` !== null`, 10*time.Second)
	b.waitFor(t, "the badge done", q("ex-badge-"+ex3)+`.dataset.state === "done"`, 10*time.Second)
	first := eval[string](t, b, q("ex-q-who-writes-ingress")+`.dataset.correct`)
	b.click(t, "ex-choice-who-writes-ingress-1")
	b.waitFor(t, "the second try recorded", `window.ccmlab.exercises.busy === ""`, 10*time.Second)
	if c := eval[string](t, b, q("ex-q-who-writes-ingress")+`.dataset.correct`); c != first {
		t.Errorf("a second try changed the quiz's result from %s to %s", first, c)
	}

	// The panel scrolls on its own beside the live view; unfold it for the
	// screenshot so every step shows.
	eval[bool](t, b, `(() => { window.scrollTo(0, 0); const a = document.querySelector(".aside"); a.style.height = "auto"; a.style.position = "static"; document.querySelector(".ex").style.overflow = "visible"; return true; })()`)
	saveScreenshot(t, b, "e2e-exercise3.png")
	// The refused lines answer 400, which the browser logs on its own.
	b.check(t, "400")
}
