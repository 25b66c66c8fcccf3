package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRestartOfferThroughThePage: in the default (aws) lab the kubevirt
// hands-on cannot run; its panel offers to restart the lab with
// --profile kubevirt. Two presses (the first only arms it) restart the
// lab, the page reloads by itself once the new lab answers, and the
// exercise is available there.
func TestRestartOfferThroughThePage(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "en")
	const id = "kubevirt-handson"
	pickExercise(t, b, id)
	offer := q("ex-restart")
	b.waitFor(t, "the restart offer", offer+` && !`+offer+`.hidden && `+offer+`.textContent.includes("--profile kubevirt")`, 15*time.Second)
	b.click(t, "ex-restart")
	b.waitFor(t, "the offer armed", offer+`.dataset.armed === "true"`, 5*time.Second)
	// A mark the reload wipes: the page seen after it is a new one.
	_ = eval[bool](t, b, `window.beforeRestart = true`)
	b.click(t, "ex-restart")
	waitAcrossReload(t, b, "the kubevirt lab's page", `!window.beforeRestart && `+q("profile")+` && `+q("profile")+`.textContent.includes("kubevirt") && `+
		q("conn-status")+`.dataset.state === "live"`, 3*time.Minute)
	pickExercise(t, b, id)
	b.waitFor(t, "the exercise available", q("ex-badge-"+id)+`.dataset.state !== "off" && `+offer+`.hidden`, 15*time.Second)
	b.check(t)
}

// waitAcrossReload is waitFor for a condition met only after the page
// reloads itself: an evaluation cut short by the navigation is tried
// again rather than failing the test.
func waitAcrossReload(t *testing.T, b *browser, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	b.dump(t)
	t.Fatalf("waiting for %s (%s): %v", what, expr, last)
}
