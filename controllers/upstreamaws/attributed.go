package upstreamaws

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// attributed wraps the upstream provider so that, while one of its
// cloudprovider.Interface methods runs, the lab's AWS API knows which one
// (cloud.MethodTracker): the call log then reads
// "LoadBalancer.EnsureLoadBalancer → CreateLoadBalancer" as it does for the
// lab's own provider, which tags its calls' contexts instead. The
// provider's behaviour is unchanged: every method is passed through.
type attributed struct {
	cloudprovider.Interface
	caller  string
	methods *cloud.MethodTracker
}

var (
	_ cloudprovider.Interface    = attributed{}
	_ cloudprovider.LoadBalancer = attributedLB{}
	_ cloudprovider.InstancesV2  = attributedInstances{}
	_ cloudprovider.Routes       = attributedRoutes{}
	_ cloudprovider.Zones        = attributedZones{}
)

func (a attributed) enter(method string) func() { return a.methods.Enter(a.caller, method) }

func (a attributed) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := a.Interface.LoadBalancer()
	if !ok {
		return nil, false
	}
	return attributedLB{lb, a}, true
}

func (a attributed) InstancesV2() (cloudprovider.InstancesV2, bool) {
	i, ok := a.Interface.InstancesV2()
	if !ok {
		return nil, false
	}
	return attributedInstances{i, a}, true
}

func (a attributed) Routes() (cloudprovider.Routes, bool) {
	r, ok := a.Interface.Routes()
	if !ok {
		return nil, false
	}
	return attributedRoutes{r, a}, true
}

func (a attributed) Zones() (cloudprovider.Zones, bool) {
	z, ok := a.Interface.Zones()
	if !ok {
		return nil, false
	}
	return attributedZones{z, a}, true
}

type attributedLB struct {
	lb cloudprovider.LoadBalancer
	a  attributed
}

func (l attributedLB) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	defer l.a.enter("LoadBalancer.GetLoadBalancer")()
	return l.lb.GetLoadBalancer(ctx, clusterName, svc)
}

func (l attributedLB) GetLoadBalancerName(ctx context.Context, clusterName string, svc *v1.Service) string {
	return l.lb.GetLoadBalancerName(ctx, clusterName, svc)
}

func (l attributedLB) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	defer l.a.enter("LoadBalancer.EnsureLoadBalancer")()
	return l.lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
}

func (l attributedLB) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	defer l.a.enter("LoadBalancer.UpdateLoadBalancer")()
	return l.lb.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
}

func (l attributedLB) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	defer l.a.enter("LoadBalancer.EnsureLoadBalancerDeleted")()
	return l.lb.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}

type attributedInstances struct {
	i cloudprovider.InstancesV2
	a attributed
}

func (i attributedInstances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	defer i.a.enter("InstancesV2.InstanceExists")()
	return i.i.InstanceExists(ctx, node)
}

func (i attributedInstances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	defer i.a.enter("InstancesV2.InstanceShutdown")()
	return i.i.InstanceShutdown(ctx, node)
}

func (i attributedInstances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	defer i.a.enter("InstancesV2.InstanceMetadata")()
	return i.i.InstanceMetadata(ctx, node)
}

type attributedRoutes struct {
	r cloudprovider.Routes
	a attributed
}

func (r attributedRoutes) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	defer r.a.enter("Routes.ListRoutes")()
	return r.r.ListRoutes(ctx, clusterName)
}

func (r attributedRoutes) CreateRoute(ctx context.Context, clusterName, nameHint string, route *cloudprovider.Route) error {
	defer r.a.enter("Routes.CreateRoute")()
	return r.r.CreateRoute(ctx, clusterName, nameHint, route)
}

func (r attributedRoutes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
	defer r.a.enter("Routes.DeleteRoute")()
	return r.r.DeleteRoute(ctx, clusterName, route)
}

type attributedZones struct {
	z cloudprovider.Zones
	a attributed
}

func (z attributedZones) GetZone(ctx context.Context) (cloudprovider.Zone, error) {
	defer z.a.enter("Zones.GetZone")()
	return z.z.GetZone(ctx)
}

func (z attributedZones) GetZoneByProviderID(ctx context.Context, providerID string) (cloudprovider.Zone, error) {
	defer z.a.enter("Zones.GetZoneByProviderID")()
	return z.z.GetZoneByProviderID(ctx, providerID)
}

func (z attributedZones) GetZoneByNodeName(ctx context.Context, nodeName types.NodeName) (cloudprovider.Zone, error) {
	defer z.a.enter("Zones.GetZoneByNodeName")()
	return z.z.GetZoneByNodeName(ctx, nodeName)
}
