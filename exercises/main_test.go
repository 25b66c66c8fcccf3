//go:build !unit

package exercises

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
)

// One real control plane (etcd, kube-apiserver, kube-controller-manager
// with --cloud-provider=external, kube-scheduler) for the package.
var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

// world is one lab without the HTTP side, as `ccmlab serve --addons lbc`
// builds it (apptest.Serve: the served defaults, a control-plane node with
// its mirror Pods and the CCM's Pod): cloud, simulated kubelets, the
// embedded CCM, data plane, flows, and the exercises Service over them.
// The lbc add-on is the one flag on top of the defaults, for the exercises
// that need it. Tests share it and use distinct names.
type world struct {
	lab     *apptest.Lab
	cloud   *cloud.Cloud
	manager *controllers.Manager
	dp      *dataplane.Dataplane
	obs     *flow.Observer
	svc     *Service
	store   *progress.Store
}

var (
	worldOnce sync.Once
	shared    *world
	worldErr  error
)

// worldNodes is the served lab's worker count.
const worldNodes = sim.DefaultNodes

// servedLab is what the world is built from: `ccmlab serve --addons lbc`.
func servedLab() sim.Lab {
	l := sim.DefaultLab()
	l.Addons = []string{controllers.AddonLBC}
	return l
}

func theWorld(t *testing.T) *world {
	t.Helper()
	cptest.Need(t)
	worldOnce.Do(func() { shared, worldErr = startWorld() })
	if worldErr != nil {
		t.Fatal(worldErr)
	}
	startBinaryBuild()
	return shared
}

func startWorld() (*world, error) {
	l := servedLab()
	lab, err := apptest.Serve(env, l)
	if err != nil {
		return nil, err
	}
	w := &world{lab: lab, cloud: lab.Cloud, manager: lab.Manager, dp: lab.Dataplane, obs: lab.Observer}
	w.store, err = progress.Open(filepath.Join(env.DataDir, "progress.db"))
	if err != nil {
		return nil, err
	}
	w.svc, err = New(Config{
		Env:   check.Env{Client: lab.Client, Cloud: lab.Cloud, Flow: w.obs, Controllers: w.manager, Dataplane: w.dp, Profile: l.Profile, History: lab.History},
		Store: w.store, Nodes: l.Nodes, SettleTimeout: 90 * time.Second,
		RestoreSystem:     lab.RestoreKubeSystem, // as app wires it
		LBCServiceWebhook: lab.SetLBCServiceWebhook,
	})
	return w, err
}

// The console test runs the real ccmlab binary. It is built once, in the
// background while the lab tests run, into the control plane's data dir
// (removed with it). CCMLAB_BINARY names a prebuilt one instead.
var binary struct {
	once sync.Once
	done chan struct{}
	path string
	out  []byte
	err  error
}

func startBinaryBuild() {
	binary.once.Do(func() {
		binary.done = make(chan struct{})
		go func() {
			defer close(binary.done)
			if p := os.Getenv("CCMLAB_BINARY"); p != "" {
				binary.path = p
				return
			}
			binary.path = filepath.Join(env.DataDir, "bin", "ccmlab")
			cmd := testutil.BuildCommand(binary.path)
			binary.out, binary.err = cmd.CombinedOutput()
		}()
	})
}

func ccmlabBinary(t *testing.T) string {
	t.Helper()
	startBinaryBuild()
	<-binary.done
	if binary.err != nil {
		t.Fatalf("go build ./cmd/ccmlab: %v\n%s", binary.err, binary.out)
	}
	return binary.path
}
