package dataplane

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// endpoint is one backend of a Service port, as kube-proxy sees it.
type endpoint struct {
	IP          string
	Port        int32
	Node        string
	PodNS       string
	PodName     string
	Ready       bool
	Serving     bool
	Terminating bool
}

func (ep endpoint) addr() string { return hostPort(ep.IP, ep.Port) }

// serviceEndpoints collects the endpoints of one Service port from its
// EndpointSlices. The slice port is matched by name, as kube-proxy does
// (the Service's targetPort may be a name that resolves differently per
// Pod). Only the first address of an endpoint is used, as in kube-proxy;
// duplicates across slices (possible while slices are being rebalanced)
// count once, preferring the ready copy. Nil conditions mean ready, per the
// EndpointSlice API.
func serviceEndpoints(sp v1.ServicePort, epSlices []*discoveryv1.EndpointSlice) []endpoint {
	seen := map[string]int{}
	var out []endpoint
	for _, sl := range epSlices {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 && sl.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var port int32
		found := false
		for _, p := range sl.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := v1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == sp.Name && protoOf(proto) == protoOf(sp.Protocol) && p.Port != nil {
				port, found = *p.Port, true
				break
			}
		}
		if !found {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ep := endpoint{IP: e.Addresses[0], Port: port}
			c := e.Conditions
			ep.Ready = c.Ready == nil || *c.Ready
			ep.Serving = ep.Ready
			if c.Serving != nil {
				ep.Serving = *c.Serving
			}
			ep.Terminating = c.Terminating != nil && *c.Terminating
			if e.NodeName != nil {
				ep.Node = *e.NodeName
			}
			if r := e.TargetRef; r != nil && r.Kind == "Pod" {
				ep.PodNS, ep.PodName = cmp.Or(r.Namespace, sl.Namespace), r.Name
			}
			if i, dup := seen[ep.addr()]; dup {
				if !out[i].Ready && ep.Ready {
					out[i] = ep
				}
				continue
			}
			seen[ep.addr()] = len(out)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(compareIPs(a.IP, b.IP), cmp.Compare(a.Port, b.Port))
	})
	return out
}

func compareIPs(a, b string) int {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	if errX != nil || errY != nil {
		return strings.Compare(a, b)
	}
	return x.Compare(y)
}

// usableEndpoints is kube-proxy's choice among endpoints: the ready ones;
// if none is ready, those still serving while terminating, so that
// connections drain during a rollout instead of failing (KEP-1669). With
// local set, only endpoints on node count (traffic policy Local).
func usableEndpoints(eps []endpoint, local bool, node string) []endpoint {
	var ready, terminating []endpoint
	for _, ep := range eps {
		if local && ep.Node != node {
			continue
		}
		switch {
		case ep.Ready:
			ready = append(ready, ep)
		case ep.Serving && ep.Terminating:
			terminating = append(terminating, ep)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// localReadyCounts counts the ready endpoints of svc per node, over all its
// ports: per node, the number kube-proxy's healthCheckNodePort server
// reports as "localEndpoints".
func localReadyCounts(svc *v1.Service, sl []*discoveryv1.EndpointSlice) map[string]int {
	ips := map[string]map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		for _, ep := range serviceEndpoints(sp, sl) {
			if ep.Ready && ep.Node != "" {
				if ips[ep.Node] == nil {
					ips[ep.Node] = map[string]bool{}
				}
				ips[ep.Node][ep.IP] = true
			}
		}
	}
	out := make(map[string]int, len(ips))
	for n, set := range ips {
		out[n] = len(set)
	}
	return out
}

// readyIPs is the set of ready endpoint IPs of svc, over all its ports.
func readyIPs(svc *v1.Service, sl []*discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		for _, ep := range serviceEndpoints(sp, sl) {
			if ep.Ready {
				out[ep.IP] = true
			}
		}
	}
	return out
}

func (e *env) endpoints(svc *v1.Service, sp *v1.ServicePort) []endpoint {
	return serviceEndpoints(*sp, e.cluster.endpointSlices(svc.Namespace, svc.Name))
}
