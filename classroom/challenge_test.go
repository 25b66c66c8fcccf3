package classroom

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/server/stream"
)

// fakeBackend reports every lab ready at a fixed address (fake labs).
type fakeBackend struct{ addrs map[string]string }

func (f fakeBackend) Prepare(context.Context) error { return nil }
func (f fakeBackend) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (f fakeBackend) Visit(string) func()           { return func() {} }
func (f fakeBackend) Ensure(_ context.Context, n string) (string, error) {
	return f.addrs[n], nil
}
func (f fakeBackend) Status(n string) (string, string) {
	if a := f.addrs[n]; a != "" {
		return stateReady, a
	}
	return stateStopped, ""
}

// fakeLab answers the challenge's two calls, or 404s them (an older lab),
// with the lab's own types.
type fakeLab struct {
	mu     sync.Mutex
	resets []string // the reset bodies received
}

// fakeCauses are what the fake lab's challenge lists.
var fakeCauses = []exercises.CauseView{
	{ID: "iam-deny", Label: i18n.Text{JA: "IAM の拒否", EN: "IAM deny"}},
	{ID: "no-service-controller", Label: i18n.Text{JA: "Service コントローラがない", EN: "no Service controller"}},
	{ID: "throttling", Label: i18n.Text{JA: "スロットリング", EN: "Throttling"}},
}

func (l *fakeLab) handler(hasChallenge bool) http.Handler {
	m := http.NewServeMux()
	detail := exercises.Detail{
		Summary:     exercises.Summary{ID: exercises.MysteryID},
		MysteryView: &exercises.MysteryView{Service: "default/web", Causes: fakeCauses},
	}
	if hasChallenge {
		m.HandleFunc("GET /api/exercises/"+exercises.MysteryID, func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(detail)
		})
		m.HandleFunc("POST /api/exercises/"+exercises.MysteryID+"/reset", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			l.mu.Lock()
			l.resets = append(l.resets, strings.TrimSpace(string(b)))
			l.mu.Unlock()
			_ = json.NewEncoder(w).Encode(detail)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpguard.WriteError(w, http.StatusNotFound, "no such exercise")
	})
	return m
}

func TestChallenge(t *testing.T) {
	newLab := func(has bool) (*fakeLab, string) {
		l := &fakeLab{}
		srv := httptest.NewServer(l.handler(has))
		t.Cleanup(srv.Close)
		return l, strings.TrimPrefix(srv.URL, "http://")
	}
	alice, aliceAddr := newLab(true)
	bob, bobAddr := newLab(true)
	_, oldAddr := newLab(false)
	c, err := New(Config{Students: []string{"alice", "bob", "old"}, DataDir: t.TempDir(), Token: "instructor-secret", Binary: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	c.backend = fakeBackend{addrs: map[string]string{"alice": aliceAddr, "bob": bobAddr, "old": oldAddr}}
	c.class.status = c.backend.Status
	call := func(method, path, body string) (int, string) {
		req := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer instructor-secret")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}

	t.Run("causes come from a lab, labels in both languages", func(t *testing.T) {
		code, b := call("GET", "/api/challenge", "")
		var got Challenge
		if code != 200 || json.Unmarshal([]byte(b), &got) != nil {
			t.Fatalf("%d %s", code, b)
		}
		if got.Exercise != exercises.MysteryID || got.AskedOf != "alice" || !slices.Equal(got.Causes, fakeCauses) {
			t.Errorf("got %+v, want alice's causes %+v", got, fakeCauses)
		}
	})

	for _, tc := range []struct {
		name, body string
		wantCode   int
		wantAlice  string // the body alice's lab received, "" for none
		wantOld    string // the error reported for the old lab
	}{
		{"a chosen cause for one student", `{"cause":"iam-deny","students":["alice"]}`, 200, `{"cause":"iam-deny"}`, ""},
		{"a random cause for all", `{"students":[]}`, 200, `{}`, "no diagnosis challenge"},
		{"a bad cause", `{"cause":"Drop Table"}`, 400, "", ""},
		{"an unknown student", `{"students":["mallory"]}`, 400, "", ""},
		{"an unknown field", `{"caus":"x"}`, 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alice.mu.Lock()
			alice.resets = nil
			alice.mu.Unlock()
			code, b := call("POST", "/api/actions/challenge", tc.body)
			if code != tc.wantCode {
				t.Fatalf("%d, want %d: %s", code, tc.wantCode, b)
			}
			alice.mu.Lock()
			got := strings.Join(alice.resets, "|")
			alice.mu.Unlock()
			if got != tc.wantAlice {
				t.Errorf("alice's lab received %q, want %q", got, tc.wantAlice)
			}
			if code != 200 {
				return
			}
			var res []ActionResult
			_ = json.Unmarshal([]byte(b), &res)
			for _, r := range res {
				switch {
				case r.Student == "old" && !strings.Contains(r.Error, tc.wantOld):
					t.Errorf("old lab: %+v, want an error saying %q", r, tc.wantOld)
				case r.Student != "old" && !r.OK:
					t.Errorf("%+v", r)
				}
			}
		})
	}
	bob.mu.Lock()
	if len(bob.resets) != 1 {
		t.Errorf("bob's lab got %d resets, want 1 (the one for all)", len(bob.resets))
	}
	bob.mu.Unlock()

	t.Run("a class whose labs lack the challenge says so", func(t *testing.T) {
		c.backend = fakeBackend{addrs: map[string]string{"old": oldAddr}}
		code, b := call("GET", "/api/challenge", "")
		if code != http.StatusBadGateway || !strings.Contains(b, "no diagnosis challenge") {
			t.Fatalf("%d %s", code, b)
		}
		c.backend = fakeBackend{addrs: map[string]string{}}
		if code, b := call("GET", "/api/challenge", ""); code != http.StatusConflict {
			t.Fatalf("no lab running: %d %s", code, b)
		}
	})
}

// TestLabStuck: the lab's stuck flows show on the student's row with how
// long, from a snapshot and from changes, and go when the flow moves.
func TestLabStuck(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	cfg := &Config{Students: []string{"alice"}, Clock: clk, Binary: "/bin/false"}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	cl := newClass(cfg, &tokens{students: map[string]string{}})
	cl.status = func(string) (string, string) { return stateReady, "" }
	noCtl := &flow.Stuck{Reason: flow.ReasonNoServiceController, Message: "no Service controller runs"}
	// The portal reads a lab's snapshot as labapi.Flows: what the lab
	// sends (a flow.Snapshot inside the stream's snapshot) decodes into it.
	sent, err := json.Marshal(stream.Snapshot{Snapshot: flow.Snapshot{
		ServiceFlows: []flow.ServiceFlow{{Service: "default/web", Stuck: noCtl}, {Service: "default/ok"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var flows labapi.Flows
	if err := json.Unmarshal(sent, &flows); err != nil || len(flows.ServiceFlows) != 2 {
		t.Fatalf("the snapshot's flows read %+v (%v)", flows, err)
	}
	cl.stuckSnapshot("alice", flows)
	clk.Step(90 * time.Second)
	cl.stuckChange("alice", "node", "ip-10-0-0-1", &flow.Stuck{Reason: flow.ReasonNoNodeController, Message: "no Node controller"})
	clk.Step(30 * time.Second)
	cl.stuckChange("alice", "service", "default/web", noCtl) // the same: still since t0

	row := cl.snapshot().Students[0]
	if len(row.Stuck) != 2 {
		t.Fatalf("stuck %+v", row.Stuck)
	}
	if s := row.Stuck[0]; s.Key != "default/web" || s.Reason != flow.ReasonNoServiceController || s.Seconds != 120 {
		t.Errorf("first (longest) stuck %+v, want default/web for 120s", s)
	}
	if s := row.Stuck[1]; s.Kind != "node" || s.Seconds != 30 {
		t.Errorf("second stuck %+v, want the node for 30s", s)
	}
	cl.stuckChange("alice", "service", "default/web", nil)
	if row := cl.snapshot().Students[0]; len(row.Stuck) != 1 || row.Stuck[0].Kind != "node" {
		t.Errorf("after the Service moved: %+v", row.Stuck)
	}
}
