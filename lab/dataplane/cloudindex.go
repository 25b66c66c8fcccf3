package dataplane

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// cloudView is one snapshot of the cloud, indexed for routing.
type cloudView struct {
	lbs       []*cloud.LoadBalancer // shared with the cloud: read-only
	lbByName  map[string]*cloud.LoadBalancer
	lbByFront map[string]*cloud.LoadBalancer // DNS name or IP
	instByID  map[string]*cloud.Instance
	instByDNS map[string]*cloud.Instance
	routes    []cloudRoute // longest prefix first
	vpc       netip.Prefix
	// aws holds the security groups the AWS model's load balancers are
	// checked against (aws.go); nil in views built without them.
	aws *awsSecurity
}

type cloudRoute struct {
	prefix netip.Prefix
	cloud.Route
}

// newCloudView indexes a Snapshot (tests build views from one).
func newCloudView(st cloud.State, vpcCIDR string) *cloudView {
	lbs := make([]*cloud.LoadBalancer, len(st.LoadBalancers))
	for i := range st.LoadBalancers {
		lbs[i] = &st.LoadBalancers[i]
	}
	return indexCloud(lbs, st.Instances, st.Routes, vpcCIDR)
}

// indexCloud builds the routing view from the cloud's cheap accessors: the
// load balancers are the cloud's shared read-only views, so a view after a
// change costs a copy of what changed, not of every target.
func indexCloud(lbs []*cloud.LoadBalancer, insts []cloud.Instance, routes []cloud.Route, vpcCIDR string) *cloudView {
	st := struct {
		Instances []cloud.Instance
		Routes    []cloud.Route
	}{insts, routes}
	cv := &cloudView{
		lbs:       lbs,
		lbByName:  make(map[string]*cloud.LoadBalancer, len(lbs)),
		lbByFront: make(map[string]*cloud.LoadBalancer, len(lbs)),
		instByID:  make(map[string]*cloud.Instance, len(st.Instances)),
		instByDNS: make(map[string]*cloud.Instance, len(st.Instances)),
	}
	cv.vpc, _ = netip.ParsePrefix(vpcCIDR)
	for _, lb := range cv.lbs {
		cv.lbByName[lb.Name] = lb
		if f := cmp.Or(lb.DNSName, lb.IP); f != "" {
			cv.lbByFront[f] = lb
		}
	}
	for i := range st.Instances {
		inst := &st.Instances[i]
		cv.instByID[inst.ID] = inst
		// A terminated instance keeps its DNS name for an hour; a live
		// one must win if both are listed.
		if old := cv.instByDNS[inst.PrivateDNSName]; old == nil || old.State == cloud.InstanceTerminated {
			cv.instByDNS[inst.PrivateDNSName] = inst
		}
	}
	for _, r := range st.Routes {
		if p, err := netip.ParsePrefix(r.DestinationCIDR); err == nil {
			cv.routes = append(cv.routes, cloudRoute{prefix: p, Route: r})
		}
	}
	slices.SortStableFunc(cv.routes, func(a, b cloudRoute) int { return cmp.Compare(b.prefix.Bits(), a.prefix.Bits()) })
	return cv
}

// loadBalancer finds a load balancer by name, DNS name or IP.
func (cv *cloudView) loadBalancer(ref string) *cloud.LoadBalancer {
	if lb := cv.lbByName[ref]; lb != nil {
		return lb
	}
	return cv.lbByFront[ref]
}

// routeFor is the VPC's longest-prefix match for ip.
func (cv *cloudView) routeFor(ip netip.Addr) *cloudRoute {
	for i := range cv.routes {
		if cv.routes[i].prefix.Contains(ip) {
			return &cv.routes[i]
		}
	}
	return nil
}
