package exercises

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The tests in this file need no control plane: the Service runs over a
// fake clientset and a real in-memory cloud.

type fakeControllers map[string]bool

func (f fakeControllers) Status() map[string]bool { return maps.Clone(f) }
func (f fakeControllers) Enable(n string) error   { f[n] = true; return nil }
func (f fakeControllers) Disable(n string) error  { f[n] = false; return nil }

type noDataplane struct{}

func (noDataplane) Do(context.Context, dataplane.Request) (dataplane.Trace, error) {
	return dataplane.Trace{}, &dataplane.RequestError{Reason: dataplane.ReasonInvalid, Message: "no data plane"}
}
func (noDataplane) Traces() []dataplane.Trace { return nil }

type noFlows struct{}

func (noFlows) ServiceFlow(string) (flow.ServiceFlow, bool) { return flow.ServiceFlow{}, false }
func (noFlows) NodeFlow(string) (flow.NodeFlow, bool)       { return flow.NodeFlow{}, false }

// fakeEnv is a lab of the given profile with nothing running.
func fakeEnv(t *testing.T, profileName string, ctrl fakeControllers) check.Env {
	t.Helper()
	p, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.New(history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return check.Env{Client: fake.NewClientset(), Cloud: c, Flow: noFlows{}, Controllers: ctrl, Dataplane: noDataplane{}, Profile: p, History: h}
}

func openStore(t *testing.T) *progress.Store {
	t.Helper()
	store, err := progress.Open(filepath.Join(t.TempDir(), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// New loads every embedded exercise and validates every check spec with
// the checker; a lab without its required fields is refused.
func TestNewValidates(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.exercises) == 0 {
		t.Fatal("no exercises loaded")
	}
	if _, err := New(Config{Store: openStore(t)}); err == nil {
		t.Error("New without an Env succeeded")
	}
}

// An exercise that needs what the lab lacks is unavailable, not broken.
func TestUnavailableExercise(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "kubevirt", fakeControllers{"node": true, "nodelifecycle": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"pending-on-purpose", "lb-class", "routes"} {
		if err := s.Reset(ctx, id); !errors.Is(err, ErrUnavailable) {
			t.Errorf("reset %s in kubevirt: %v", id, err)
		}
		if _, err := s.Check(ctx, id, "en"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("check %s in kubevirt: %v", id, err)
		}
	}
	list, err := s.List(ctx, "en")
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range list {
		want := !slices.Contains([]string{"pending-on-purpose", "iam-deny", "lb-class", "local-traffic", "routes",
			"delete-finalizer", "ingress-ip-hostname", "lbc-annotations", "rate-limits", "cloudprovider-interface", "mystery-pending"}, sum.ID)
		if sum.Available != want {
			t.Errorf("%s available = %v (%s)", sum.ID, sum.Available, sum.Unavailable)
		}
	}
}
