package exercises

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// One real control plane (etcd, kube-apiserver, kube-controller-manager
// with --cloud-provider=external, kube-scheduler) for the package.
var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

// world is one lab without the HTTP side: cloud, simulated kubelets, the
// embedded CCM (with the lbc add-on installed), data plane, flows, and the
// exercises Service over them. Tests share it and use distinct names.
type world struct {
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

const worldNodes = 3

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
	p, _ := profile.Get("aws")
	lab, err := apptest.Start(env, sim.Config{
		Profile: p, Nodes: worldNodes, Controllers: p.DefaultOn, Addons: []string{controllers.AddonLBC},
	})
	if err != nil {
		return nil, err
	}
	w := &world{cloud: lab.Cloud, manager: lab.Manager, dp: lab.Dataplane, obs: lab.Observer}
	w.store, err = progress.Open(filepath.Join(env.DataDir, "progress.db"))
	if err != nil {
		return nil, err
	}
	w.svc, err = New(Config{
		Env:   check.Env{Client: lab.Client, Cloud: lab.Cloud, Flow: w.obs, Controllers: w.manager, Dataplane: w.dp, Profile: p, History: lab.History},
		Store: w.store, Nodes: worldNodes, SettleTimeout: 90 * time.Second,
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
			cmd := exec.Command("go", "build", "-o", binary.path, "github.com/ccmlab/ccmlab/cmd/ccmlab")
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
