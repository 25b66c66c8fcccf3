package provider

import (
	"context"
	"errors"
	"fmt"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var _ cloudprovider.Interface = (*Provider)(nil)

// Provider is ccmlab's cloud provider: the code a cloud vendor writes so the
// shared k8s.io/cloud-provider controllers can drive its cloud. It is safe
// for concurrent use.
//
// A Provider made by New calls the cloud as "unknown"; For returns a
// view that names its caller, and the Manager hands every controller such a
// view, additionally bound to that controller instance's lifetime.
type Provider struct {
	cloud       *cloud.Cloud
	profile     profile.Profile
	clusterName string
	region      string

	caller string
	// life, when set, ends every cloud call as soon as the controller
	// instance using this view is switched off, including calls upstream
	// code makes with context.TODO().
	life context.Context
	// gate, when set, refuses calls after the instance is switched off and
	// lets the manager wait for calls in flight.
	gate Gate
	// services, when set, is the controller instance's own client, used to
	// confirm a Service still exists before its load balancer is created.
	services corev1client.ServicesGetter
}

// New returns a Provider over c that behaves as profile p describes.
// clusterName tags the load balancers it creates ("" means "ccmlab").
func New(c *cloud.Cloud, p profile.Profile, clusterName string) *Provider {
	if clusterName == "" {
		clusterName = DefaultClusterName
	}
	return &Provider{cloud: c, profile: p, clusterName: clusterName, region: c.Config().Region}
}

// DefaultClusterName is used when Config.ClusterName is empty.
const DefaultClusterName = "ccmlab"

// For returns a view of p whose cloud calls are logged as made by caller,
// e.g. p.For("service-controller").
func (p *Provider) For(caller string) *Provider {
	v := *p
	v.caller = caller
	return &v
}

// Gate admits the cloud calls of one controller instance. The manager
// closes it when the instance is switched off: from then on Enter reports
// false, and the manager waits for the calls that entered to Leave.
type Gate interface {
	Enter() bool
	Leave()
}

// ErrSwitchedOff is returned for API requests and cloud calls that a
// controller instance attempts after it was switched off.
var ErrSwitchedOff = errors.New("ccmlab: this controller was switched off; request not sent")

// Bind returns a view whose calls end with life (even calls upstream code
// makes with context.TODO()) and pass through g.
func (p *Provider) Bind(life context.Context, g Gate) *Provider {
	v := *p
	v.life, v.gate = life, g
	return &v
}

// WithServices returns a view that confirms a Service with the apiserver
// before creating its load balancer (see EnsureLoadBalancer).
func (p *Provider) WithServices(s corev1client.ServicesGetter) *Provider {
	v := *p
	v.services = s
	return &v
}

// Caller is the name cloud calls made by this view carry.
func (p *Provider) Caller() string { return p.caller }

// begin prepares the context of one cloud call: the caller's name, and
// cancellation when the controller instance is switched off. end must be
// called when the call returns.
func (p *Provider) begin(ctx context.Context) (_ context.Context, end func(), _ error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if p.gate != nil && !p.gate.Enter() {
		return nil, nil, ErrSwitchedOff
	}
	leave := func() {}
	if p.gate != nil {
		leave = p.gate.Leave
	}
	if p.caller != "" {
		ctx = cloud.WithCaller(ctx, p.caller)
	}
	if p.life == nil {
		return ctx, leave, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.life, cancel)
	return ctx, func() {
		stop()
		cancel()
		leave()
	}, nil
}

// Initialize is part of cloudprovider.Interface. The simulated cloud needs
// no credentials and runs no goroutines of its own, so there is nothing to do.
func (p *Provider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer returns the load balancer implementation, unless the profile
// has no Service controller (kubevirt): then it reports false, which is what
// makes the upstream Service controller refuse to start.
func (p *Provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if !p.profile.Has(profile.Service) {
		return nil, false
	}
	return p, true
}

// Instances reports false: the provider implements the newer InstancesV2.
func (p *Provider) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 returns the instances implementation.
func (p *Provider) InstancesV2() (cloudprovider.InstancesV2, bool) { return p, true }

// Zones returns the zones implementation. The Node controller does not need
// it when InstancesV2 is present; it is here for completeness.
func (p *Provider) Zones() (cloudprovider.Zones, bool) { return p, true }

// Clusters reports false: one lab is one cluster.
func (p *Provider) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes returns the route table implementation for profiles that have a
// Route controller.
func (p *Provider) Routes() (cloudprovider.Routes, bool) {
	if !p.profile.Has(profile.Route) {
		return nil, false
	}
	return p, true
}

// ProviderName is the profile's provider name ("aws" or "kubevirt").
func (p *Provider) ProviderName() string { return p.profile.ProviderName }

// HasClusterID reports true: every load balancer is tagged with the cluster.
func (p *Provider) HasClusterID() bool { return true }

// ProviderID returns the providerID a Node on instance inst gets, as the
// profile spells it (profile.Profile.ProviderID).
func (p *Provider) ProviderID(inst cloud.Instance) string {
	return p.profile.ProviderID(Machine(inst))
}

// Machine is what a providerID names of an instance.
func Machine(inst cloud.Instance) profile.Machine {
	return profile.Machine{Zone: inst.Zone, InstanceID: inst.ID, NodeName: inst.PrivateDNSName}
}

// wrap adds what was being done to a cloud error, keeping its text (for
// example "AccessDenied: User: ... is not authorized to perform: ...") and
// keeping it reachable with errors.As.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
