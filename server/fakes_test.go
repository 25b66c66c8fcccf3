package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// fakeControllers stands in for the CCM manager: the API test is about the
// HTTP contract, and the manager has its own integration tests.
// It answers with the manager's sentinel errors, which is what the server
// maps to statuses.
type fakeControllers struct {
	mu   sync.Mutex
	on   map[string]bool
	busy string // Enable of this controller fails with ErrBusy
	// fail, when set, is asked before a switch; its error is returned
	// as the hosted manager returns the DaemonSet update's (the
	// apiserver's answer, unchanged) and nothing is switched.
	fail func() error
}

func (f *fakeControllers) Status() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k, v := range f.on {
		out[k] = v
	}
	return out
}

func (f *fakeControllers) set(n string, v bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.on[n]; !ok {
		if slices.Contains(append(profile.AllControllers(), controllers.AddonLBC), n) {
			return fmt.Errorf("%w: the kubevirt profile has no %s controller", controllers.ErrNotInProfile, n)
		}
		return fmt.Errorf("%w %q", controllers.ErrUnknownController, n)
	}
	if v && n == f.busy {
		return fmt.Errorf("%w: the previous %s controller still has requests in flight", controllers.ErrBusy, n)
	}
	if f.fail != nil {
		if err := f.fail(); err != nil {
			return err
		}
	}
	f.on[n] = v
	return nil
}

func (f *fakeControllers) Enable(n string) error { return f.set(n, true) }

func (f *fakeControllers) Disable(n string) error { return f.set(n, false) }

func TestStartingLabAnswers503(t *testing.T) {
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/api/state", "/ws"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s = %d, want 503", path, rec.Code)
		}
	}
}

type testLab struct {
	srv   *Server
	cloud *cloud.Cloud
	ctrl  *fakeControllers
	inst  cloud.Instance
}

type req struct {
	method, path, body string
	header             map[string]string
}

func (l *testLab) do(r req) (int, string) {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	hr.Host = "localhost:8080" // httptest's example.com is not the lab's
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	l.srv.ServeHTTP(rec, hr)
	return rec.Code, rec.Body.String()
}
