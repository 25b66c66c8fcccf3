package controlplane

import (
	"errors"
	"fmt"
	"net"
	"time"
)

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
	// Progress is told as each component becomes ready; nil is fine.
	Progress func(stage string, elapsed time.Duration)
}

// Defaults fills in what a lab needs when a field is left zero.
func (c *Config) Defaults() {
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.ClusterCIDR == "" {
		// A /14 holds 1,024 node /24s, enough for the 1,000-node budget,
		// while podCIDRs still read like the chapter's 10.244.1.0/24.
		c.ClusterCIDR = "10.244.0.0/14"
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = 24
	}
	if c.NodeMonitorGracePeriod == 0 {
		c.NodeMonitorGracePeriod = 10 * time.Second
	}
	if c.Progress == nil {
		c.Progress = func(string, time.Duration) {}
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("data dir is required")
	}
	for name, cidr := range map[string]string{"service CIDR": c.ServiceCIDR, "cluster CIDR": c.ClusterCIDR} {
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
	return nil
}
