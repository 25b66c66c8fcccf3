//go:build !unit

package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server/hub"
)

// newDiskLab is newTestLab with a data dir whose disk the test controls.
func newDiskLab(t *testing.T, disk *datafs.Switch) (*testLab, string) {
	t.Helper()
	cptest.Need(t)
	dir := t.TempDir()
	c, err := cloud.New(cloud.Config{StatePath: filepath.Join(dir, "cloud.json"), Files: disk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	inst, err := c.RunInstance(context.Background(), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &fakeControllers{on: map[string]bool{"node": true, "nodelifecycle": true}}
	obs, err := flow.New(flow.Config{Client: env.Client, Cloud: c, Controllers: ctrl.Status})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = obs.Run(ctx) }()
	if err := obs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := hub.New(hub.Config{RecordEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DataDir: dir, Files: disk})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := profile.Get("kubevirt")
	hst, err := history.New(history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The progress database lives in the data dir, as in the binary.
	store, err := progress.Open(filepath.Join(dir, "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ex, err := exercises.New(exercises.Config{
		Env:   check.Env{Client: env.Client, Cloud: c, Flow: obs, Controllers: ctrl, Dataplane: noDataplane{}, Profile: p, History: hst},
		Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetLab(&Lab{Profile: p, Cloud: c, Controllers: ctrl, Flow: obs, Hub: h, Exercises: ex, Epoch: "test", Client: env.Client})
	srv.SetReady(true)
	return &testLab{srv: srv, cloud: c, ctrl: ctrl, inst: inst}, dir
}

// TestFullDataDir goes through the real handler: with the data dir's disk
// full, an exercise reset (which probes the disk before it starts), the
// student's instance calls and the exercise answers answer 507, say what
// is full and that nothing changed, and change nothing; the lab keeps
// answering, /healthz says degraded; once space is freed it recovers by
// itself and the next launch is on disk when it is answered.
func TestFullDataDir(t *testing.T) {
	disk := &datafs.Switch{}
	l, dir := newDiskLab(t, disk)
	id := l.inst.ID
	wantErr := []string{`{"error":"The disk of the lab's data dir is full (data dir full: ` + dir + `).`, "Nothing was changed.", "takes changes again by itself"}
	instances := func() string {
		t.Helper()
		code, body := l.do(req{method: "GET", path: "/api/cloud/instances"})
		if code != http.StatusOK {
			t.Fatalf("GET /api/cloud/instances = %d %s", code, body)
		}
		return body
	}
	exercisesNow := func() string {
		t.Helper()
		code, body := l.do(req{method: "GET", path: "/api/exercises"})
		if code != http.StatusOK {
			t.Fatalf("GET /api/exercises = %d %s", code, body)
		}
		return body
	}
	before, beforeProgress := instances(), exercisesNow()

	disk.SetFull(true)
	for _, tc := range []struct {
		name string
		req  req
	}{
		// First, before any write has met the full disk: a reset probes it.
		{"exercise reset", req{method: "POST", path: "/api/exercises/node-init/reset"}},
		{"launch", req{method: "POST", path: "/api/cloud/instances"}},
		{"launch with a body", req{method: "POST", path: "/api/cloud/instances", body: `{"zone":"ap-northeast-1c"}`}},
		{"stop", req{method: "POST", path: "/api/cloud/instances/" + id + "/stop"}},
		{"terminate", req{method: "DELETE", path: "/api/cloud/instances/" + id}},
		{"exercise check", req{method: "POST", path: "/api/exercises/node-init/check"}},
		{"quiz answer", req{method: "POST", path: "/api/exercises/review/quiz/q1", body: `{"choice":0}`}},
		{"another reset", req{method: "POST", path: "/api/exercises/review/reset"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := l.do(tc.req)
			if code != http.StatusInsufficientStorage {
				t.Fatalf("%s %s on a full disk = %d %s, want 507", tc.req.method, tc.req.path, code, body)
			}
			for _, w := range wantErr {
				if !strings.Contains(body, w) {
					t.Errorf("%s %s on a full disk: %s, want it to say %q", tc.req.method, tc.req.path, body, w)
				}
			}
			if after := instances(); after != before {
				t.Errorf("instances changed by a refused call:\n got %s\nwant %s", after, before)
			}
			if after := exercisesNow(); after != beforeProgress {
				t.Errorf("exercises changed by a refused call:\n got %s\nwant %s", after, beforeProgress)
			}
		})
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"healthz degraded", "/healthz", "degraded: data dir full: " + dir},
		{"state still answers", "/api/state", `"epoch":"test"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := l.do(req{method: "GET", path: tc.path})
			if code != http.StatusOK || !strings.Contains(body, tc.want) {
				t.Fatalf("GET %s on a full disk = %d %s, want 200 containing %q", tc.path, code, body, tc.want)
			}
		})
	}

	disk.SetFull(false)
	testutil.Eventually(t, 10*time.Second, "the lab to recover once space is freed", func() (bool, string) {
		_, body := l.do(req{method: "GET", path: "/healthz"})
		return body == "ok", body
	})
	code, body := l.do(req{method: "POST", path: "/api/cloud/instances"})
	if code != http.StatusCreated {
		t.Fatalf("launch after recovery = %d %s", code, body)
	}
	var inst cloud.Instance
	if err := json.Unmarshal([]byte(body), &inst); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "cloud.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), inst.ID) {
		t.Errorf("instance %s was answered 201 but is not in the state file", inst.ID)
	}
	if _, err := os.Stat(filepath.Join(dir, probeName)); !os.IsNotExist(err) {
		t.Errorf("the space probe was left behind: %v", err)
	}
}
