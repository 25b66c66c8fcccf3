package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
	"github.com/ccmlab/ccmlab/web"
)

type logEntry struct {
	Player string  `json:"player"`
	I      int     `json:"i"`
	At     float64 `json:"at"`
}

// TestFlowReplayAtChosenPace: a finished LoadBalancer flow replayed on the
// live page walks its steps in order, one per chosen interval, on the
// strip and the tables, and the lab hears nothing of it.
func TestFlowReplayAtChosenPace(t *testing.T) {
	f := newFakeLab(t, bigWorld(3, 3, 1))
	b := openFake(t, f, "?lang=en")
	const lbTestid = "lb-a0000000000000000000000000000000"
	b.waitFor(t, "the flow at step 5", q("svc-step-count")+`.dataset.step === "5" && `+q(lbTestid), 15*time.Second)
	b.waitFor(t, "the replay button enabled", `!`+q("flow-replay")+`.disabled`, 5*time.Second)
	before := len(f.recorded())

	b.click(t, "flow-replay")
	b.waitFor(t, "the player at the first moment", q("flow-player")+` && `+q("flow-player")+`.dataset.index === "0" && `+q("flow-player")+`.dataset.state === "paused"`, 5*time.Second)
	// Moment 0: nothing done yet; the load balancer is not there yet.
	b.waitFor(t, "the strip back at step 0", q("svc-step-count")+`.dataset.step === "0" && `+q("svc-step-apply")+`.dataset.status === "current" && !`+q(lbTestid), 5*time.Second)

	saveScreenshot(t, b, "e2e-flow-replay-start.png")

	const pace = 0.5 // seconds per step
	b.do(t, "choosing the pace", chromedp.SetValue(sel("flow-player-pace"), fmt.Sprint(pace)),
		chromedp.Evaluate[chromedp.Void](q("flow-player-pace")+`.dispatchEvent(new Event("change"))`))
	if v := eval[string](t, b, q("flow-player-pace")+`.value`); v != fmt.Sprint(pace) {
		t.Fatalf("pace %q, want %v", v, pace)
	}
	b.click(t, "flow-player-play")
	b.waitFor(t, "the replay playing", q("flow-player")+`.dataset.state === "playing"`, 5*time.Second)
	b.waitFor(t, "the replay at its end", q("flow-player")+`.dataset.state === "paused" && `+q("flow-player")+`.dataset.index === "5"`, 20*time.Second)
	b.waitFor(t, "the strip at step 5 again", q("svc-step-count")+`.dataset.step === "5" && `+q("svc-step-status")+`.dataset.status === "done" && `+q(lbTestid), 5*time.Second)

	log := eval[[]logEntry](t, b, `window.ccmlab.replayLog.filter((e) => e.player === "flow-player")`)
	// The log holds the first moment (opening the player), then the play
	// from 1 to 5.
	var got []int
	for _, e := range log {
		got = append(got, e.I)
	}
	if want := "[0 1 2 3 4 5]"; fmt.Sprint(got) != want {
		t.Fatalf("moments shown %v, want %s", got, want)
	}
	// From the first step shown after play to the last: at least 4 whole
	// intervals (timers never fire early). No upper bound: a loaded
	// machine may be slow, and that is not what this test is about.
	if took := log[5].At - log[1].At; took < 4*pace*1000-5 {
		t.Errorf("steps 1..5 took %.0f ms, want at least %.0f", took, 4*pace*1000)
	}

	b.click(t, "flow-player-close")
	b.waitFor(t, "back to live", `!`+q("flow-player")+` && `+q("svc-step-count")+`.dataset.step === "5"`, 5*time.Second)
	if calls := f.recorded()[before:]; len(calls) != 0 {
		t.Errorf("the replay made requests to the lab: %v", calls)
	}
	b.check(t)
}

// TestRecordingReplay: a recording taken from a live lab whose page is
// Japanese, played by `ccmlab replay` on its own, shows the same Service,
// hostname and steps, in English on the English page, paused at the
// recording's last moment.
func TestRecordingReplay(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	live := openPage(t, l, "ja")
	createWeb(t, kubeClient(t, l))
	live.waitFor(t, "step 5", `Number(`+q("svc-step-count")+`.dataset.step) >= 5 && `+q("svc-step-status")+`.dataset.status === "done"`, 60*time.Second)
	var lbs []struct {
		Name    string `json:"name"`
		DNSName string `json:"dnsName"`
	}
	l.getJSON(t, "/api/cloud/loadbalancers", &lbs)
	if len(lbs) != 1 || lbs[0].DNSName == "" {
		t.Fatalf("want one load balancer with a DNS name, got %+v", lbs)
	}
	host := lbs[0].DNSName

	if res, err := http.Get("http://" + l.addr + "/api/recording?since=yesterday"); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET /api/recording?since=yesterday: %v %v, want 400", res, err)
	} else {
		res.Body.Close()
	}
	res, err := http.Get("http://" + l.addr + "/api/recording")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/recording: %v %v", res, err)
	}
	recording, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "demo.ndjson")
	if err := os.WriteFile(file, recording, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recording: %d bytes, %d lines", len(recording), strings.Count(string(recording), "\n"))

	addr, took := startReplay(t, file)
	t.Logf("ccmlab replay answered /healthz %v after it was started", took)

	b := newBrowser(t, needChromium(t), "http://"+addr)
	b.do(t, "opening the replay", chromedp.Navigate("http://"+addr+"/?lang=en"))
	b.waitFor(t, "the player at the last moment, paused",
		q("player")+` && `+q("player")+`.dataset.state === "paused" && Number(`+q("player")+`.dataset.index) === Number(`+q("player")+`.dataset.count) - 1`, 15*time.Second)
	if st := eval[string](t, b, q("conn-status")+`.dataset.state`); st != "replay" {
		t.Errorf("conn status %q, want replay", st)
	}
	row := "svc-row-default/web"
	b.waitFor(t, "the Service with its hostname", q(row)+` && `+q(row)+`.querySelector('[data-testid="svc-external-ip"]').textContent === `+js(host), 10*time.Second)
	b.waitFor(t, "the steps", q("flow-service-select")+`.value === "default/web" && Number(`+q("svc-step-count")+`.dataset.step) >= 5 && `+q("svc-step-status")+`.dataset.status === "done"`, 10*time.Second)
	// Recorded from the Japanese page, shown in English: the stream
	// carries keys, the page says them in its language.
	stored, _, _ := strings.Cut(web.T(web.EN, flowtext.ServiceStored), "{")
	if ev := eval[string](t, b, q("svc-step-apply")+`.querySelector(".step-evidence").textContent`); !strings.HasPrefix(ev, stored) {
		t.Errorf("step 1 evidence = %q, want it to start with %q", ev, stored)
	}
	// Nothing on the page may act on a lab.
	if n := eval[int](t, b, `[...document.querySelectorAll('[data-action="launch"], [data-action="send-request"]')].filter((e) => e.offsetParent !== null).length`); n != 0 {
		t.Errorf("%d lab actions visible in replay mode", n)
	}
	if n := eval[int](t, b, `[...document.querySelectorAll('[data-action="toggle-controller"]')].filter((e) => !e.disabled).length`); n != 0 {
		t.Errorf("%d controller switches enabled in replay mode", n)
	}
	saveScreenshot(t, b, "e2e-replay-last-moment.png")

	// Rewind, step, and back to the end with the scrubber.
	b.click(t, "player-first")
	b.waitFor(t, "the first moment", q("player")+`.dataset.index === "0"`, 5*time.Second)
	b.click(t, "player-next")
	b.waitFor(t, "the second moment", q("player")+`.dataset.index === "1"`, 5*time.Second)
	b.do(t, "scrubbing to the end", chromedp.Evaluate[chromedp.Void](`(() => { const s = `+q("player-scrub")+`; s.value = s.max; s.dispatchEvent(new Event("input")); })()`))
	b.waitFor(t, "the last moment again", `Number(`+q("player")+`.dataset.index) === Number(`+q("player")+`.dataset.count) - 1 && `+q(row)+` && `+q(row)+`.querySelector('[data-testid="svc-external-ip"]').textContent === `+js(host), 10*time.Second)

	b.mu.Lock()
	for _, r := range b.requests {
		if strings.Contains(r, "/ws") || (strings.Contains(r, "/api/") && !strings.HasSuffix(r, "/api/recording")) {
			t.Errorf("the replay page asked for %s", r)
		}
	}
	b.mu.Unlock()
	b.check(t)
}

// startReplay runs `ccmlab replay FILE` and waits for its /healthz. It
// returns the address and how long /healthz took to answer 200.
func startReplay(t *testing.T, file string) (string, time.Duration) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binPath, "replay", file, "--listen", addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			t.Logf("replay: %s", sc.Text())
		}
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr, time.Since(begin)
			}
		}
		select {
		case <-exited:
			t.Fatalf("ccmlab replay exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ccmlab replay did not answer /healthz: %v %s", err, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNodeReplaySteps: a node's initialization replayed step by step
// brings back its uninitialized taint and shows it fall at step 5.
func TestNodeReplaySteps(t *testing.T) {
	f := newFakeLab(t, bigWorld(3, 3, 1))
	b := openFake(t, f, "?lang=en")
	b.waitFor(t, "a node's timeline", q("node-taint")+`.dataset.state === "removed" && !`+q("node-replay")+`.disabled`, 15*time.Second)
	b.click(t, "node-replay")
	b.waitFor(t, "no Node yet at moment 0", q("node-player")+`.dataset.index === "0" && `+q("node-taint")+`.dataset.state === "none"`, 5*time.Second)
	for i, want := range []string{"none", "present", "present", "present", "removed", "removed"} {
		b.click(t, "node-player-next")
		b.waitFor(t, fmt.Sprintf("moment %d: taint %s", i+1, want), q("node-player")+`.dataset.index === "`+fmt.Sprint(i+1)+`" && `+q("node-taint")+`.dataset.state === "`+want+`"`, 5*time.Second)
	}
	b.click(t, "node-player-close")
	b.waitFor(t, "back to live", `!`+q("node-player")+` && `+q("node-taint")+`.dataset.state === "removed"`, 5*time.Second)
	b.check(t)
}
