// Package cptest starts one real control plane for a test package. Call it
// from TestMain; every test in the package then shares the same apiserver,
// which keeps integration suites fast (a start costs about 3 s) while still
// testing against the real thing rather than a fake clientset.
//
// Under -short (make test-unit) Main starts nothing and leaves the Env nil,
// so the package's unit tests run without etcd and the apiserver, and it
// checks with goleak that they leave no goroutine running. Every test that
// uses the Env calls Need first (usually inside the package's lab
// constructor), which skips it under -short.
package cptest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// Env is the shared control plane of a test package.
type Env struct {
	// Ctx ends when the package's tests are done, before the control plane
	// stops: components a test package starts with it (kubelets,
	// controllers) go quiet instead of retrying against a dead apiserver.
	Ctx     context.Context
	CP      *controlplane.ControlPlane
	Config  *rest.Config
	Client  kubernetes.Interface
	DataDir string
}

// Main starts a control plane in a temporary data dir, runs the package's
// tests with it and tears it down. Use it as
//
//	var env *cptest.Env
//	func TestMain(m *testing.M) { cptest.Main(m, &env) }
//
// Under -short it starts no control plane, leaves *env nil and only runs
// the tests.
func Main(m *testing.M, env **Env, mutate ...func(*controlplane.Config)) {
	// testing.Short needs parsed flags; m.Run would parse them only later.
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		// Unit tests only: they must leave no goroutine behind.
		goleak.VerifyTestMain(m, IgnoreLeaks()...)
		return
	}
	os.Exit(run(m, env, mutate))
}

// IgnoreLeaks lists the goroutines that Kubernetes libraries start at init
// and keep for the life of the process; goleak ignores them in the unit
// tests of packages that link those libraries.
func IgnoreLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}

// Need skips t under -short, where Main starts no control plane. Call it
// before the first use of the package's Env.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane (skipped under -short)")
	}
}

func run(m *testing.M, env **Env, mutate []func(*controlplane.Config)) int {
	dir, err := os.MkdirTemp("", "ccmlab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cptest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg := controlplane.Config{DataDir: dir}
	for _, f := range mutate {
		f(&cfg)
	}
	// klog's logger is installed before anything logs: a test that serves
	// a lab later only points it at the lab's Pod logs (CaptureKlog).
	controlplane.CaptureKlog(nil, 0)
	cp, err := controlplane.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cptest: starting control plane:", err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "cptest: stopping control plane:", err)
		}
	}()
	client, err := kubernetes.NewForConfig(cp.RestConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, "cptest:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // runs before the deferred Stop above
	*env = &Env{Ctx: ctx, CP: cp, Config: cp.RestConfig(), Client: client, DataDir: dir}
	return m.Run()
}

// Start runs run in the background with a context of its own and returns
// a stop func: it cancels that context and waits up to 30s for run to
// return, failing t if run returned an error or did not return. stop is
// safe to call more than once (a test may stop early and also defer it).
func Start(t testing.TB, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return within 30s of cancel")
			}
		})
	}
}
