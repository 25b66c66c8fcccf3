//go:build !unit

package classroom

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// binary is the ccmlab the local backend runs, built once: the labs are
// real "ccmlab serve" processes.
var (
	binary   string
	buildErr error
)

// env is the control plane the kubernetes backend is tested against.
var env *cptest.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The fast tier runs the unit tests only; the tests that need the
		// binary or the control plane skip.
		cptest.Main(m, &env)
		return
	}
	cptest.Main(m, &env, func(cfg *controlplane.Config) {
		// Built into the control plane's temporary dir, which cptest
		// removes when the package's tests are done.
		path, cleanup, err := testutil.BuildCCMLab()
		if err != nil {
			buildErr = err
			return
		}
		defer cleanup()
		binary = filepath.Join(cfg.DataDir, "ccmlab")
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			buildErr = err
			return
		}
		buildErr = os.Rename(path, binary)
	})
}

// needBinary skips under -short and fails when the build failed.
func needBinary(t testing.TB) {
	t.Helper()
	cptest.Need(t)
	if buildErr != nil || binary == "" {
		t.Fatalf("building ccmlab: %v", buildErr)
	}
}

// eventually is internal/testutil's, the suite's one wait.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testutil.Eventually(t, timeout, what, cond)
}

type portal struct {
	t    *testing.T
	c    *Classroom
	base string
}

func (p *portal) do(method, path, token string, body any) (int, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func (p *portal) json(method, path, token string, body, out any) {
	p.t.Helper()
	code, b := p.do(method, path, token, body)
	if code/100 != 2 {
		p.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			p.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

func (p *portal) class() Class {
	var cl Class
	p.json("GET", "/api/class", p.c.InstructorToken(), nil, &cl)
	return cl
}

// The bodies of the lab's POST …/quiz/<q> and PUT /api/controllers/<name>
// as a student's page sends them (the server's own request types are not
// exported).
type (
	quizAnswer struct {
		Choice int `json:"choice"`
	}
	controllerSwitch struct {
		Enabled bool `json:"enabled"`
	}
)

func row(cl Class, name string) StudentRow {
	for _, s := range cl.Students {
		if s.Name == name {
			return s
		}
	}
	return StudentRow{}
}

// TestLocalClass runs a class of three on the local backend: three real
// labs (one node each, to be kind to the machine).
func TestLocalClass(t *testing.T) {
	needBinary(t)
	students := []string{"alice", "bob", "carol"}
	dataDir := t.TempDir()
	c, err := New(Config{
		Students: students, DataDir: dataDir, Binary: binary, Prestart: true,
		Lab: LabOptions{Nodes: 1}, StopTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx, ln) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-runDone:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the classroom did not stop within a minute")
		}
	}
	t.Cleanup(stop)
	p := &portal{t: t, c: c, base: "http://" + ln.Addr().String()}
	teacher := c.InstructorToken()

	eventually(t, 3*time.Minute, "every lab ready", func() (bool, string) {
		cl := p.class()
		for _, s := range cl.Students {
			if s.Lab != stateReady {
				return false, s.Name + " is " + s.Lab
			}
		}
		return true, ""
	})

	t.Run("each lab process runs with the class's limits", func(t *testing.T) {
		lb := c.backend.(*localBackend)
		for _, s := range students {
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", lb.pid(s)))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^Max open files\s+4096\s+4096\s+files`).Match(limits) {
				t.Errorf("%s's lab:\n%s", s, limits)
			}
			log, err := os.ReadFile(filepath.Join(dataDir, "students", s+".log"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "ccmlab limits: memory 1Gi (Go soft limit), 4096 open files"; !strings.Contains(string(log), want) {
				t.Errorf("%s's lab log does not say %q:\n%s", s, want, log)
			}
		}
	})

	t.Run("students.csv links each student to their lab", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(dataDir, "students.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range students {
			want := p.base + "/s/" + s + "/?token=" + c.StudentToken(s)
			if !strings.Contains(string(b), s+","+want+"\n") {
				t.Errorf("students.csv lacks %s's link %s:\n%s", s, want, b)
			}
		}
	})

	t.Run("each student reaches only their own lab", func(t *testing.T) {
		// Each sets a different cloud latency in their lab and reads back
		// their own.
		for i, s := range students {
			p.json("PUT", "/s/"+s+"/api/cloud/faults", c.StudentToken(s), cloud.Faults{Latency: cloud.Duration{Duration: time.Duration(i+1) * time.Millisecond}}, nil)
		}
		for i, s := range students {
			var f cloud.Faults
			p.json("GET", "/s/"+s+"/api/cloud/faults", c.StudentToken(s), nil, &f)
			if want := time.Duration(i+1) * time.Millisecond; f.Latency.Duration != want {
				t.Errorf("%s reads latency %s, want %s", s, f.Latency.Duration, want)
			}
			for _, other := range students {
				if other == s {
					continue
				}
				if code, _ := p.do("GET", "/s/"+other+"/api/cloud/faults", c.StudentToken(s), nil); code != http.StatusForbidden {
					t.Errorf("%s's token on %s's lab: %d, want 403", s, other, code)
				}
			}
		}
		for _, tc := range []struct {
			name, method, path, token string
			want                      int
		}{
			{"no token", "GET", "/s/alice/api/state", "", 401},
			{"wrong token", "GET", "/s/alice/api/state", "wrong-token", 403},
			{"instructor reads", "GET", "/s/alice/api/cloud/faults", teacher, 200},
			{"instructor may not write", "PUT", "/s/alice/api/cloud/faults", teacher, 403},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if code, b := p.do(tc.method, tc.path, tc.token, struct{}{}); code != tc.want {
					t.Fatalf("%d, want %d: %s", code, tc.want, b)
				}
			})
		}
	})

	t.Run("the page works behind the prefix", func(t *testing.T) {
		code, page := p.do("GET", "/s/bob/?token="+c.StudentToken("bob"), "", nil)
		if code != 200 || !strings.Contains(string(page), `src="static/`) {
			t.Fatalf("page: %d, want assets named relative to the page:\n%.600s", code, page)
		}
		i := strings.Index(string(page), `src="static/`)
		asset, _, _ := strings.Cut(string(page)[i+len(`src="`):], `"`)
		if code, b := p.do("GET", "/s/bob/"+asset, c.StudentToken("bob"), nil); code != 200 {
			t.Fatalf("asset %s: %d %s", asset, code, b)
		}
		// The websocket, through the proxy.
		wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer wcancel()
		conn, _, err := websocket.Dial(wctx, strings.Replace(p.base, "http", "ws", 1)+"/s/bob/ws", &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + c.StudentToken("bob")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		conn.SetReadLimit(64 << 20)
		_, b, err := conn.Read(wctx)
		if err != nil || !strings.Contains(string(b), `"type":"snapshot"`) {
			t.Fatalf("first message: %v %.200s", err, b)
		}
	})

	alice := c.StudentToken("alice")
	t.Run("a step passed in alice's lab shows in the class within a second", func(t *testing.T) {
		// The dashboard's feed, opened before the step passes.
		sctx, scancel := context.WithCancel(context.Background())
		defer scancel()
		req, _ := http.NewRequestWithContext(sctx, "GET", p.base+"/api/class/events", nil)
		req.Header.Set("Authorization", "Bearer "+teacher)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("events: %v %v", err, res)
		}
		defer res.Body.Close()
		fed := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var cl Class
				if json.Unmarshal([]byte(data), &cl) == nil && row(cl, "alice").Exercises["node-init"].StepsPassed >= 1 {
					close(fed)
					return
				}
			}
		}()

		p.json("POST", "/s/alice/api/cloud/instances", alice, nil, nil)
		var passedAt time.Time
		eventually(t, 2*time.Minute, "node-init's first step passes", func() (bool, string) {
			var rep struct {
				Steps []struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"steps"`
			}
			p.json("POST", "/s/alice/api/exercises/node-init/check", alice, nil, &rep)
			passedAt = time.Now()
			return len(rep.Steps) > 0 && rep.Steps[0].Status == "passed", fmt.Sprint(rep.Steps)
		})
		eventually(t, time.Until(passedAt.Add(time.Second)), "the class shows it", func() (bool, string) {
			r := row(p.class(), "alice")
			cell := r.Exercises["node-init"]
			return cell.StepsPassed >= 1 && r.Current != nil && r.Current.Exercise == "node-init", fmt.Sprintf("%+v %+v", cell, r.Current)
		})
		select {
		case <-fed:
		default:
			select {
			case <-fed:
			case <-time.After(time.Until(passedAt.Add(time.Second))):
				t.Error("the dashboard's event stream did not show alice's step within a second")
			}
		}
		if r := row(p.class(), "bob"); r.Exercises["node-init"].StepsPassed != 0 {
			t.Errorf("bob's row shows alice's progress: %+v", r.Exercises["node-init"])
		}
	})

	t.Run("wrong answers reach the dashboard", func(t *testing.T) {
		// review is quiz only: its quiz is open from the start (a quiz
		// opens once its exercise's steps have passed).
		var d exercises.Detail
		p.json("GET", "/s/alice/api/exercises/review", alice, nil, &d)
		if len(d.Quiz) == 0 {
			t.Fatal("review has no quiz")
		}
		// Every choice of one question: exactly one is right.
		q := d.Quiz[0]
		for i := range q.Choices {
			p.json("POST", "/s/alice/api/exercises/review/quiz/"+q.ID, alice, quizAnswer{Choice: i}, nil)
		}
		eventually(t, 30*time.Second, "the class shows alice's wrong answers", func() (bool, string) {
			cell := row(p.class(), "alice").Exercises["review"]
			return cell.WrongAnswers == len(q.Choices)-1, fmt.Sprintf("%+v", cell)
		})
		code, b := p.do("GET", "/api/class.csv", teacher, nil)
		if code != 200 || !strings.Contains(string(b), "wrong_answers") {
			t.Fatalf("%d:\n%s", code, b)
		}
	})

	t.Run("the CSV export has every student", func(t *testing.T) {
		code, b := p.do("GET", "/api/class.csv", teacher, nil)
		if code != 200 || !strings.Contains(string(b), "alice,node-init,") || !strings.Contains(string(b), "carol,node-init,") {
			t.Fatalf("%d:\n%s", code, b)
		}
	})

	t.Run("a reset sent to all reaches all", func(t *testing.T) {
		var res []ActionResult
		p.json("POST", "/api/actions/reset", teacher, resetRequest{Exercise: "node-init"}, &res)
		if len(res) != len(students) {
			t.Fatalf("results %+v", res)
		}
		for _, r := range res {
			if !r.OK {
				t.Errorf("%s: %s", r.Student, r.Error)
			}
		}
		eventually(t, 5*time.Second, "alice's progress is reset", func() (bool, string) {
			cell := row(p.class(), "alice").Exercises["node-init"]
			return cell.StepsPassed == 0, fmt.Sprintf("%+v", cell)
		})
		var lat []ActionResult
		p.json("PUT", "/api/actions/latency", teacher, latencyRequest{actionTarget{Students: []string{"bob", "carol"}}, "0s"}, &lat)
		if len(lat) != 2 || !lat[0].OK || !lat[1].OK {
			t.Fatalf("latency: %+v", lat)
		}
	})

	t.Run("the lab's own stuck reason shows, and goes", func(t *testing.T) {
		carol := c.StudentToken("carol")
		// Without the Node controller a new node cannot be initialized:
		// carol's lab says so on its stream.
		p.json("PUT", "/s/carol/api/controllers/node", carol, controllerSwitch{Enabled: false}, nil)
		var inst struct {
			PrivateDNSName string `json:"privateDNSName"`
		}
		p.json("POST", "/s/carol/api/cloud/instances", carol, nil, &inst)
		if inst.PrivateDNSName == "" {
			t.Fatal("the launched instance has no private DNS name (the node's name)")
		}
		eventually(t, time.Minute, "carol's row says her new node is stuck: no-node-controller", func() (bool, string) {
			r := row(p.class(), "carol")
			for _, st := range r.Stuck {
				if st.Kind == "node" && st.Key == inst.PrivateDNSName && st.Reason == "no-node-controller" && st.Message != "" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", r.Stuck)
		})
		if r := row(p.class(), "alice"); len(r.Stuck) != 0 {
			t.Errorf("alice's row shows carol's stuck node: %+v", r.Stuck)
		}
		p.json("PUT", "/s/carol/api/controllers/node", carol, controllerSwitch{Enabled: true}, nil)
		eventually(t, time.Minute, "carol's node initialized, her row unstuck", func() (bool, string) {
			r := row(p.class(), "carol")
			return len(r.Stuck) == 0, fmt.Sprintf("%+v", r.Stuck)
		})
	})

	t.Run("a killed lab comes back with its data", func(t *testing.T) {
		bob := c.StudentToken("bob")
		// A failed check is recorded as an attempt in the lab's data dir.
		p.json("POST", "/s/bob/api/exercises/node-init/check", bob, nil, nil)
		pid := c.backend.(*localBackend).pid("bob")
		if pid == 0 {
			t.Fatal("bob's lab runs no process")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "bob's lab is back", func() (bool, string) {
			state, _ := c.backend.Status("bob")
			return state == stateReady && c.backend.(*localBackend).pid("bob") != pid, state
		})
		var d exercises.Detail
		p.json("GET", "/s/bob/api/exercises/node-init", bob, nil, &d)
		if len(d.Steps) == 0 || d.Steps[0].Attempts < 1 {
			t.Fatalf("bob's attempt was lost: %+v", d.Steps)
		}
	})

	t.Run("the labs stop with the portal", func(t *testing.T) {
		pids := map[string]int{}
		for _, s := range students {
			pids[s] = c.backend.(*localBackend).pid(s)
		}
		stop()
		for s, pid := range pids {
			if pid != 0 && syscall.Kill(pid, 0) == nil {
				t.Errorf("%s's lab (pid %d) outlived the portal", s, pid)
			}
		}
	})
}
