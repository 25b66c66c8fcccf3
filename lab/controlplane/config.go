package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/labapi"
)

// DefaultEtcdQuotaBytes is a lab's etcd backend quota (Config.EtcdQuotaBytes).
const DefaultEtcdQuotaBytes = labapi.DefaultEtcdQuotaBytes

// DefaultEtcdDiskReserve is the free space below which a lab's etcd stops
// taking writes (Config.EtcdDiskReserve): one 64 MB WAL segment, the most
// etcd may need to preallocate before its next write.
const DefaultEtcdDiskReserve = 64 << 20

// Config says where the control plane keeps its state and how the cluster's
// networks are laid out.
type Config struct {
	// DataDir holds etcd's data, the PKI and the kubeconfig. Required.
	DataDir string
	// ServiceCIDR is the ClusterIP range (kube-apiserver --service-cluster-ip-range).
	ServiceCIDR string
	// ClusterCIDR is the Pod network the controller-manager cuts per-node
	// podCIDRs from (--cluster-cidr with --allocate-node-cidrs).
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's podCIDR.
	NodeCIDRMaskSize int
	// NodeMonitorGracePeriod is how long a Node may go without a heartbeat
	// before the node-lifecycle controller marks it NotReady. The lab sets it
	// short (10s, upstream default 50s) so that a terminated VM shows within
	// an exercise.
	NodeMonitorGracePeriod time.Duration
	// Verbosity is the klog level of the Kubernetes components; 0 silences
	// them entirely, so the lab's own progress lines are all a user sees.
	Verbosity int
	// APIServerOnly starts etcd and kube-apiserver and nothing else. It is
	// the baseline the cold-start benchmark compares a whole lab against.
	APIServerOnly bool
	// Infra starts the management side too (infra.go): a second
	// kube-apiserver on its own port and etcd prefix, for the kubevirt
	// profile's VMIs and CCM. InfraServiceCIDR is its Service range
	// (default 10.112.0.0/16, apart from the tenant's).
	Infra            bool
	InfraServiceCIDR string
	// Progress is told as each component becomes ready; nil is fine.
	Progress func(stage string, elapsed time.Duration)

	// EtcdQuotaBytes is etcd's backend quota (--quota-backend-bytes): past
	// it etcd raises its NOSPACE alarm and refuses every write that takes
	// space. 0 means DefaultEtcdQuotaBytes.
	EtcdQuotaBytes int64
	// EtcdDiskReserve is the free space on the data dir's filesystem below
	// which the lab raises etcd's NOSPACE alarm itself: etcd ends the
	// process when a write of its own fails, so it must stop taking writes
	// while it still has room. 0 means DefaultEtcdDiskReserve.
	EtcdDiskReserve int64
	// EtcdSpaceCheck is how often the lab looks at etcd's alarms, its
	// database's size and the free disk (etcdspace.go). 0 means 2s.
	EtcdSpaceCheck time.Duration
	// Clock paces the space checks; nil means the real clock.
	Clock clock.WithTicker
	// Logger says when etcd runs out of space and when it takes writes
	// again; nil discards.
	Logger *slog.Logger

	// EgressMaxTunnels bounds the tunnels the apiserver holds open at once
	// through the lab's egress proxy (egress.go): every kubectl logs -f,
	// exec, attach, port-forward and pods/services proxy request is one.
	// Past it a new one is refused with 503 and a sentence saying so, so a
	// student's loop of port-forwards cannot take the class's sockets.
	// 0 means DefaultEgressMaxTunnels.
	EgressMaxTunnels int

	// diskFree stands in for statfs in tests (export_test.go).
	diskFree func(dir string) (int64, error)
}

// Defaults fills in what a lab needs when a field is left zero.
func (c *Config) Defaults() {
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.InfraServiceCIDR == "" {
		c.InfraServiceCIDR = "10.112.0.0/16"
	}
	if c.ClusterCIDR == "" {
		// A /14 holds 1,024 node /24s, enough for the 1,000-node budget,
		// while podCIDRs still read like the chapter's 10.244.1.0/24.
		c.ClusterCIDR = "10.244.0.0/14"
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = 24
	}
	if c.EgressMaxTunnels == 0 {
		c.EgressMaxTunnels = DefaultEgressMaxTunnels
	}
	if c.NodeMonitorGracePeriod == 0 {
		c.NodeMonitorGracePeriod = 10 * time.Second
	}
	if c.Progress == nil {
		c.Progress = func(string, time.Duration) {}
	}
	if c.EtcdQuotaBytes == 0 {
		c.EtcdQuotaBytes = DefaultEtcdQuotaBytes
	}
	if c.EtcdDiskReserve == 0 {
		c.EtcdDiskReserve = DefaultEtcdDiskReserve
	}
	if c.EtcdSpaceCheck == 0 {
		c.EtcdSpaceCheck = 2 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("data dir is required")
	}
	for name, cidr := range map[string]string{"service CIDR": c.ServiceCIDR, "cluster CIDR": c.ClusterCIDR, "management service CIDR": c.InfraServiceCIDR} {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return fmt.Errorf("%s %q: %w", name, cidr, err)
		}
	}
	_, cluster, _ := net.ParseCIDR(c.ClusterCIDR)
	if ones, _ := cluster.Mask.Size(); c.NodeCIDRMaskSize <= ones || c.NodeCIDRMaskSize > 30 {
		return fmt.Errorf("node CIDR mask size %d must be longer than the cluster CIDR's /%d and at most /30", c.NodeCIDRMaskSize, ones)
	}
	if c.NodeMonitorGracePeriod < 2*time.Second {
		return fmt.Errorf("node monitor grace period %s is too short (minimum 2s)", c.NodeMonitorGracePeriod)
	}
	if c.Verbosity < 0 {
		return fmt.Errorf("verbosity %d must not be negative", c.Verbosity)
	}
	// etcd's own floor is none, but below a few MiB the apiserver's
	// bootstrap objects alone (RBAC roles, flow control) would not fit.
	if c.EtcdQuotaBytes < minEtcdQuotaBytes || c.EtcdQuotaBytes > maxEtcdQuotaBytes {
		return fmt.Errorf("etcd quota %d bytes must be between %d (%d MiB) and %d (%d GiB)", c.EtcdQuotaBytes,
			int64(minEtcdQuotaBytes), minEtcdQuotaBytes>>20, int64(maxEtcdQuotaBytes), maxEtcdQuotaBytes>>30)
	}
	if c.EtcdDiskReserve < 0 {
		return fmt.Errorf("etcd disk reserve %d bytes must not be negative", c.EtcdDiskReserve)
	}
	if c.EgressMaxTunnels < 1 || c.EgressMaxTunnels > maxEgressTunnels {
		return fmt.Errorf("egress tunnel limit %d must be between 1 and %d", c.EgressMaxTunnels, maxEgressTunnels)
	}
	if c.EtcdSpaceCheck < 100*time.Millisecond || c.EtcdSpaceCheck > time.Minute {
		return fmt.Errorf("etcd space check interval %s must be between 100ms and 1m", c.EtcdSpaceCheck)
	}
	return nil
}

// DefaultEgressMaxTunnels is Config.EgressMaxTunnels' default: far above
// what one student's terminals hold (a few exec sessions, a port-forward,
// logs -f), well below a process's 1,024 default file descriptors, each
// tunnel taking two.
const DefaultEgressMaxTunnels = 256

const maxEgressTunnels = 4096

// The range of Config.EtcdQuotaBytes. The ceiling is etcd's suggested
// maximum (storage/quota.go:33, MaxQuotaBytes).
const (
	minEtcdQuotaBytes = 16 << 20
	maxEtcdQuotaBytes = 8 << 30
)
