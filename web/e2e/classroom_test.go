package e2e

import (
	"bufio"
	"encoding/json"
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

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// classroomPortal is a "ccmlab classroom" process (local backend: its labs
// are child processes of it).
type classroomPortal struct {
	base, dataDir, instructor string
	students                  map[string]string // name -> token
}

// startClassroom runs the real binary's classroom with every lab started
// ahead, and waits for its "ccmlab classroom is ready:" line.
func startClassroom(t *testing.T, students ...string) *classroomPortal {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building ccmlab: %v", buildErr)
	}
	dir := t.TempDir()
	p := &classroomPortal{dataDir: filepath.Join(dir, "class"), instructor: "instructor-e2e-token", students: map[string]string{}}
	addr := freeAddr(t)
	p.base = "http://" + addr
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "classroom", "--students", strings.Join(students, ","), "--listen", addr,
		"--data-dir", p.dataDir, "--token", p.instructor, "--prestart", "--nodes", "1", "-v", "1")
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// The portal stops its labs on SIGTERM.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		stderr.Close()
		if t.Failed() {
			b, _ := os.ReadFile(stderr.Name())
			t.Logf("classroom stderr (last 4 KB):\n%s", tail(b, 4096))
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ccmlab classroom is ready:") {
				ready <- line
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-exited:
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("ccmlab classroom exited before it was ready:\n%s", tail(b, 4096))
	case <-time.After(2 * time.Minute):
		t.Fatal("ccmlab classroom was not ready within 2 minutes")
	}
	b, err := os.ReadFile(filepath.Join(p.dataDir, "student-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p.students); err != nil {
		t.Fatal(err)
	}
	return p
}

// call is a student's (or the instructor's) request through the portal.
// postJSON posts a JSON body with a student's token and wants a 2xx.
func (p *classroomPortal) postJSON(t *testing.T, path, token, body string) {
	t.Helper()
	sendJSON(t, http.MethodPost, p.base+path, token, body)
}

func (p *classroomPortal) call(t *testing.T, method, path, token string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, p.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s %s", method, path, res.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// TestClassroomDashboard drives the instructor's dashboard of a real
// class of two: the instructor's link logs in, both students show with
// their labs ready, a step alice passes turns her cell live, and a reset
// sent to alice alone (selected) empties her cell again.
func TestClassroomDashboard(t *testing.T) {
	chrome := needChromium(t)
	p := startClassroom(t, "alice", "bob")
	b := newBrowser(t, chrome, p.base)

	// The instructor's link, as printed: the token becomes a cookie, so
	// the page's own requests (the event stream, the actions) carry it.
	b.do(t, "opening the dashboard", chromedp.Navigate(p.base+"/?token="+p.instructor))
	b.waitFor(t, "both students listed", q("student-alice")+" && "+q("student-bob"), 10*time.Second)
	b.waitFor(t, "the dashboard is live", q("conn")+".textContent === 'live'", 30*time.Second)
	b.waitFor(t, "both labs ready", q("lab-alice")+".textContent === 'ready' && "+q("lab-bob")+".textContent === 'ready'", 3*time.Minute)
	b.waitFor(t, "the exercises' columns", q("cell-alice-node-init"), time.Minute)
	// The challenge's causes come from a lab; a lab without the
	// challenge is named, not silently ignored.
	b.waitFor(t, "the challenge's causes, or why there are none",
		`document.querySelectorAll('[data-testid="challenge-cause"] option').length > 1 || `+q("challenge-status")+`.textContent.includes('no diagnosis challenge')`, 30*time.Second)
	// Each cause shows its label (the lab's CauseView.label), not its id.
	if unlabeled := eval[int](t, b, `[...document.querySelectorAll('[data-testid="challenge-cause"] option')].filter((o) => o.value && (!o.textContent || o.textContent === o.value)).length`); unlabeled != 0 {
		t.Errorf("%d of the challenge's causes show no label", unlabeled)
	}

	// A live update keeps the checkboxes themselves: an instructor's click
	// lands on the element pressed even when the class changes under it.
	eval[bool](t, b, q("pick-alice")+".__kept = true")

	alice := p.students["alice"]
	p.call(t, "POST", "/s/alice/api/cloud/instances", alice, nil)
	testutil.Eventually(t, 2*time.Minute, "node-init's first step passes in alice's lab", func() (bool, string) {
		var rep struct {
			Steps []struct {
				Status string `json:"status"`
			} `json:"steps"`
		}
		p.call(t, "POST", "/s/alice/api/exercises/node-init/check", alice, &rep)
		return len(rep.Steps) > 0 && rep.Steps[0].Status == "passed", fmt.Sprint(rep.Steps)
	})
	b.waitFor(t, "alice's first step passed, live", q("cell-alice-node-init")+".dataset.passed >= 1 && "+
		q("cell-alice-node-init")+".querySelector('.step.passed')", 5*time.Second)
	if !eval[bool](t, b, q("pick-alice")+".__kept === true") {
		t.Error("a live update replaced alice's checkbox: a click pressed during it is lost")
	}
	if got := eval[string](t, b, q("cell-bob-node-init")+".dataset.passed"); got != "0" {
		t.Errorf("bob's cell shows %s steps passed", got)
	}
	// Wrong answers show in the cell: every choice of one question, of
	// which exactly one is right.
	var d struct {
		Quiz []struct {
			ID      string `json:"id"`
			Choices []any  `json:"choices"`
		} `json:"quiz"`
	}
	// review is quiz only: its quiz is open from the start (a quiz opens
	// once its exercise's steps have passed).
	p.call(t, "GET", "/s/alice/api/exercises/review", alice, &d)
	if len(d.Quiz) == 0 {
		t.Fatal("review has no quiz")
	}
	for i := range d.Quiz[0].Choices {
		p.postJSON(t, "/s/alice/api/exercises/review/quiz/"+d.Quiz[0].ID, alice, fmt.Sprintf(`{"choice":%d}`, i))
	}
	b.waitFor(t, "alice's wrong answers on the dashboard", fmt.Sprintf("%s.dataset.wrong === '%d' && %s !== null",
		q("cell-alice-review"), len(d.Quiz[0].Choices)-1, q("wrong-alice-review")), 10*time.Second)

	// A reset for the selected student only.
	b.click(t, "pick-alice")
	b.do(t, "choosing node-init", chromedp.SetValue(chromedp.CSS(sel("reset-exercise")), "node-init"))
	b.click(t, "action-reset")
	b.waitFor(t, "the reset reported for one lab", q("action-result")+".textContent.startsWith('1 done')", 30*time.Second)
	b.waitFor(t, "alice's cell empty again", q("cell-alice-node-init")+".dataset.passed === '0'", 10*time.Second)
	if !eval[bool](t, b, q("pick-alice")+".checked") {
		t.Error("alice's selection did not survive the live update")
	}
	b.check(t)
}
