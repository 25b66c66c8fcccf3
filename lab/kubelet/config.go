package kubelet

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Config wires the simulated kubelets to the cluster and the cloud.
type Config struct {
	// Client talks to the apiserver. With many nodes give it a rate limit of
	// at least nodes/HeartbeatInterval QPS (or none): every node renews its
	// Lease once per interval, and a client-side queue would make healthy
	// nodes look dead to the node-lifecycle controller.
	Client kubernetes.Interface
	// Cloud is watched (Snapshot and Subscribe, which are not API calls and
	// so stay out of the students' call log) for instances to run.
	Cloud *cloud.Cloud
	// Profile decides where Pod IPs come from (PodIPsFromVPC).
	Profile profile.Profile

	// HeartbeatInterval is how often each node renews its Lease. Default
	// 2.5s: a quarter of the lab's 10s node-monitor-grace-period, the ratio
	// a real kubelet keeps (it renews every 10s, a quarter of its 40s
	// lease, against a 40s-50s grace period).
	HeartbeatInterval time.Duration
	// NodeStatusInterval is the longest a node goes without writing its
	// conditions when nothing changed (kubelet's nodeStatusReportFrequency).
	// Default 5m, the kubelet's: the Lease is the heartbeat, and a status
	// write costs far more (every Node watcher gets the whole Node).
	NodeStatusInterval time.Duration
	// ResyncInterval is how often the whole instance list is re-read from
	// the cloud, in case an event was dropped. Default 10s.
	ResyncInterval time.Duration
	// PodWorkers is how many Pods are synced in parallel across all nodes.
	// Default 4.
	PodWorkers int

	// Logs holds the containers' logs the kubelet API serves (server.go);
	// with nil, or without CA, no kubelet API runs.
	Logs *podlog.Store
	// CACertPEM and CAKeyPEM are the lab's CA, which signs each node's
	// serving certificate and the apiserver's client certificate.
	CACertPEM, CAKeyPEM []byte
	// StaticPods returns the static Pod manifests of the control-plane
	// node (the instance tagged ControlPlaneTag); its kubelet keeps a
	// mirror Pod for each (staticpods.go). Optional.
	StaticPods func() []StaticPod
	// ControlPlaneUntainted registers the control-plane node without
	// node-role.kubernetes.io/control-plane:NoSchedule, as kubeadm does
	// with an empty nodeRegistration.taints: the kubevirt profile's tenant
	// cluster, whose first node the chapter shows with no taint at all.
	ControlPlaneUntainted bool
	// Runtime runs the containers of the Pods it claims (runtime.go);
	// optional. CrashBackoff and MaxCrashBackoff are the back-off after a
	// container exits (defaults 10s and 300s, the kubelet's).
	Runtime                       Runtime
	CrashBackoff, MaxCrashBackoff time.Duration
	// Containers runs the containers of every other Pod but mirror Pods
	// (containers.go); optional: without it they are reported running
	// with no process behind them.
	Containers PodRuntime

	Clock  clock.WithTicker // default clock.RealClock{}
	Logger *slog.Logger     // default slog.Default()
}

const (
	defaultHeartbeatInterval  = 2500 * time.Millisecond
	defaultNodeStatusInterval = 5 * time.Minute
	defaultResyncInterval     = 10 * time.Second
	defaultPodWorkers         = 4
)

// validate fills defaults and reports every problem at once.
func (c *Config) validate() error {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = defaultHeartbeatInterval
	}
	if c.NodeStatusInterval == 0 {
		c.NodeStatusInterval = defaultNodeStatusInterval
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = defaultResyncInterval
	}
	if c.PodWorkers == 0 {
		c.PodWorkers = defaultPodWorkers
	}
	if c.CrashBackoff == 0 {
		c.CrashBackoff = defaultCrashBackoff
	}
	if c.MaxCrashBackoff == 0 {
		c.MaxCrashBackoff = defaultMaxCrashBackoff
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client: required"))
	}
	if c.Cloud == nil {
		errs = append(errs, errors.New("cloud: required"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"heartbeat interval", c.HeartbeatInterval},
		{"node status interval", c.NodeStatusInterval},
		{"resync interval", c.ResyncInterval},
		{"crash back-off", c.CrashBackoff},
		{"max crash back-off", c.MaxCrashBackoff},
	} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s %s: must be positive", d.name, d.d))
		}
	}
	if c.PodWorkers < 0 {
		errs = append(errs, fmt.Errorf("pod workers %d: must be positive", c.PodWorkers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubelet: invalid config: %w", err)
	}
	return nil
}
