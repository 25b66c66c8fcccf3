//go:build !unit

package apptest

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// env is the one control plane this package's tests and benchmarks share.
var env *cptest.Env

// leaseFlag picks the heartbeat timing of this package's runs: "lab" is
// the exercises' pace (a Lease renewed every 2.5 s, a node NotReady after
// 10 s), "upstream" a kubelet's and kube-controller-manager's defaults
// (every 10 s, a quarter of the 40 s Lease; NotReady after 50 s), which
// `make bench-scale` gives the 1,000-node runs: at the lab's pace, 12 of a
// joining node's 20 writes are Lease renewals, a load no real cluster of
// that size carries.
var leaseFlag = flag.String("lease", "lab", `heartbeat timing: "lab" (2.5 s / 10 s) or "upstream" (10 s / 50 s)`)

// leaseTiming is a heartbeat timing: how often each kubelet renews its
// Lease and how long the node-lifecycle controller waits before it marks a
// silent node NotReady.
type leaseTiming struct {
	Name      string
	Heartbeat time.Duration
	Grace     time.Duration
}

func timingOf(name string) (leaseTiming, error) {
	switch name {
	case "lab":
		// The kubelet package's and the control plane's defaults.
		return leaseTiming{Name: name, Heartbeat: 2500 * time.Millisecond, Grace: 10 * time.Second}, nil
	case "upstream":
		// kubelet: NodeLeaseDurationSeconds 40 renewed at 0.25 of it
		// (pkg/kubelet/apis/config/v1beta1/defaults.go, pkg/kubelet/kubelet.go
		// nodeLeaseRenewIntervalFraction); kube-controller-manager:
		// NodeMonitorGracePeriod 50 s (pkg/controller/nodelifecycle/config/
		// v1alpha1/defaults.go).
		return leaseTiming{Name: name, Heartbeat: 10 * time.Second, Grace: 50 * time.Second}, nil
	}
	return leaseTiming{}, fmt.Errorf(`-lease %q: want "lab" or "upstream"`, name)
}

// timing is the run's timing, checked in TestMain.
func timing() leaseTiming {
	t, _ := timingOf(*leaseFlag)
	return t
}

func TestMain(m *testing.M) {
	flag.Parse()
	t, err := timingOf(*leaseFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cptest.Main(m, &env, func(c *controlplane.Config) { c.NodeMonitorGracePeriod = t.Grace })
}
