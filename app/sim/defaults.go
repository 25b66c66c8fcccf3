package sim

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The lab `ccmlab serve` builds when given no flags. cmd/ccmlab takes its
// flag defaults from here and app builds its simulation through Served, and
// app/apptest builds the test world through them too: an exercise tested
// on a world that differs from the served lab (no control-plane node, other
// switches) passes its tests and fails for students, so there is one place.
const (
	// DefaultNodes is --nodes: worker instances launched on first start.
	DefaultNodes = 3
	// DefaultProfile is --profile.
	DefaultProfile = "aws"
	// DefaultNodeStatusUpdateFrequency: a node's addresses are refreshed
	// once a minute rather than every 5s, so the call log students read is
	// not a wall of DescribeInstances (upstream refreshes every 5m).
	DefaultNodeStatusUpdateFrequency = time.Minute
)

// The CCM's cloud provider on the AWS-shaped profiles (--aws-provider).
const (
	// AWSProviderLab is the lab's own provider (controllers/provider)
	// over the lab's Go API.
	AWSProviderLab = "lab"
	// AWSProviderUpstream is k8s.io/cloud-provider-aws talking the AWS
	// query protocol to the lab's AWS API (controllers/upstreamaws).
	AWSProviderUpstream = "upstream"
)

// DefaultAWSProvider is --aws-provider's default for a profile.
func DefaultAWSProvider(p profile.Profile) string {
	if UpstreamAWSProfile(p) {
		return AWSProviderUpstream
	}
	return AWSProviderLab
}

// UpstreamAWSProfile says whether the upstream provider can run on a
// profile: those whose cloud is AWS-shaped (aws:/// provider IDs, DNS
// names for load balancers).
func UpstreamAWSProfile(p profile.Profile) bool {
	return p.Name == "aws" || p.Name == "vpc-cni"
}

// Lab is what the flags of `ccmlab serve` choose about the simulation.
type Lab struct {
	// AWSProvider is AWSProviderLab or AWSProviderUpstream; "" is
	// DefaultAWSProvider(Profile).
	AWSProvider string
	Profile     profile.Profile
	// Controllers on at start, as profile.ParseControllers returns them.
	Controllers []string
	// Addons: "lbc" runs the AWS Load Balancer Controller as its chart
	// installs it (lbcpod.go).
	Addons []string
	Nodes  int
	// CloudLatency delays every cloud call (--cloud-latency).
	CloudLatency time.Duration
	// Quotas are the cloud's (zero: cloud.DefaultQuotas, a student's);
	// the scale benchmarks give room for their 1,000 load balancers.
	Quotas cloud.Quotas
}

// DefaultLab is the lab `ccmlab serve` builds without flags: the aws
// profile with all its controllers on, no add-on, DefaultNodes workers.
func DefaultLab() Lab {
	p, err := profile.Get(DefaultProfile)
	if err != nil {
		panic(fmt.Sprintf("sim: the default profile %q is unknown: %v", DefaultProfile, err))
	}
	on, _ := p.ParseControllers("")
	return Lab{Profile: p, Controllers: on, Nodes: DefaultNodes, AWSProvider: DefaultAWSProvider(p)}
}

// Embedded is what the embedded control plane adds to the simulation: a
// control-plane node whose kubelet keeps the static Pods' mirrors, and the
// CA that signs the kubelets' serving certificates. Zero for an attached
// cluster (or the bare apiserver), which gets no control-plane node.
type Embedded struct {
	StaticPods          []*v1.Pod
	CACertPEM, CAKeyPEM []byte
}

// Served is the simulation's Config as `ccmlab serve` builds it for l on a
// control plane (emb), without the wiring only the binary has (RestConfig,
// ClusterCIDR, state path, callbacks, logger, log store): app sets those,
// app/apptest sets the test control plane's.
func Served(l Lab, emb Embedded) Config {
	return Config{
		Profile: l.Profile, Nodes: l.Nodes, CloudLatency: l.CloudLatency, CloudQuotas: l.Quotas,
		Controllers: slices.Clone(l.Controllers), Addons: slices.Clone(l.Addons),
		Tuning:           controllers.Tuning{NodeStatusUpdateFrequency: DefaultNodeStatusUpdateFrequency},
		ControlPlaneNode: emb.StaticPods != nil, StaticPods: emb.StaticPods,
		CACertPEM: emb.CACertPEM, CAKeyPEM: emb.CAKeyPEM,
	}
}
