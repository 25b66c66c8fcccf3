package dataplane

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// SRV and PTR records of the DNS specification of Kubernetes
// (kubernetes/kubernetes cmd/kube-dns/SPEC.md, schema 1.0.0, which CoreDNS's
// kubernetes plugin implements):
//
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone>: one SRV record per named
//     port, whose target is the Service's name, or for a headless Service
//     one per ready endpoint, whose target is
//     <hostname>.<svc>.<ns>.svc.<zone> (the endpoint's hostname, else its
//     dashed address). Unnamed ports have none. Priority and weight are
//     not prescribed; the lab gives the specification's example values.
//   - <d>.<c>.<b>.<a>.in-addr.arpa: PTR to the Service whose ClusterIP
//     it is, or to <hostname>.<svc>.<ns>.svc.<zone> of a headless
//     Service's ready endpoint. Other addresses are NXDOMAIN (kubeadm's
//     Corefile lets in-addr.arpa fall through to the VPC's resolver,
//     which in the lab knows none).

// DNS query types beyond dns.go's.
const (
	TypePTR uint16 = 12
)

// srvPriority and srvWeight: cmd/kube-dns/SPEC.md's examples
// ("IN SRV 10 100 443 ...").
const (
	srvPriority = 10
	srvWeight   = 100
)

// SRVRecord is one SRV answer.
type SRVRecord struct {
	Priority, Weight uint16
	Port             int32
	Target           string
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc.<zone>; ok is false when
// the name does not exist.
func (d *Dataplane) srv(name string) ([]SRVRecord, bool) {
	rest, found := strings.CutSuffix(name, ".svc."+ClusterDomain)
	if !found {
		return nil, false
	}
	labels := strings.Split(rest, ".")
	if len(labels) != 4 || !strings.HasPrefix(labels[0], "_") || !strings.HasPrefix(labels[1], "_") {
		return nil, false
	}
	port, proto, svcName, ns := labels[0][1:], labels[1][1:], labels[2], labels[3]
	e := d.env()
	svc := e.cluster.service(ns, svcName)
	if svc == nil {
		return nil, false
	}
	var sp *v1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.Name != "" && strings.EqualFold(p.Name, port) && strings.EqualFold(string(protoOf(p.Protocol)), proto) {
			sp = p
		}
	}
	if sp == nil {
		return nil, false
	}
	svcFQDN := svcName + "." + ns + ".svc." + ClusterDomain
	if len(clusterIPs(svc)) > 0 {
		return []SRVRecord{{Priority: srvPriority, Weight: srvWeight, Port: sp.Port, Target: svcFQDN}}, true
	}
	var out []SRVRecord
	for _, ep := range readyHostnames(e.cluster.endpointSlices(ns, svcName)) {
		out = append(out, SRVRecord{Priority: srvPriority, Weight: srvWeight, Port: sp.Port, Target: ep.host + "." + svcFQDN})
	}
	return out, true
}

type hostAddr struct{ host, addr string }

// readyHostnames are the ready endpoints' hostnames (the dashed address
// when an endpoint has none) with their addresses, sorted.
func readyHostnames(sl []*discoveryv1.EndpointSlice) []hostAddr {
	var out []hostAddr
	for _, s := range sl {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				h := strings.ReplaceAll(a, ".", "-")
				if ep.Hostname != nil && *ep.Hostname != "" {
					h = *ep.Hostname
				}
				out = append(out, hostAddr{h, a})
			}
		}
	}
	slices.SortFunc(out, func(a, b hostAddr) int { return strings.Compare(a.host+a.addr, b.host+b.addr) })
	return slices.Compact(out)
}

// ptr answers <d>.<c>.<b>.<a>.in-addr.arpa.
func (d *Dataplane) ptr(name string) ([]string, bool) {
	rest, found := strings.CutSuffix(name, ".in-addr.arpa")
	if !found {
		return nil, false
	}
	o := strings.Split(rest, ".")
	if len(o) != 4 {
		return nil, false
	}
	slices.Reverse(o)
	a, err := netip.ParseAddr(strings.Join(o, "."))
	if err != nil || !a.Is4() {
		return nil, false
	}
	ip := a.String()
	e := d.env()
	lister, ok := e.cluster.(interface{ allServices() []*v1.Service })
	if !ok {
		return nil, false
	}
	var out []string
	for _, svc := range lister.allServices() {
		fqdn := svc.Name + "." + svc.Namespace + ".svc." + ClusterDomain
		if ips := clusterIPs(svc); len(ips) > 0 {
			if slices.Contains(ips, ip) {
				out = append(out, fqdn)
			}
			continue
		}
		if svc.Spec.Type == v1.ServiceTypeExternalName {
			continue
		}
		for _, ep := range readyHostnames(e.cluster.endpointSlices(svc.Namespace, svc.Name)) {
			if ep.addr == ip {
				out = append(out, ep.host+"."+fqdn)
			}
		}
	}
	slices.Sort(out)
	return out, len(out) > 0
}

// allServices lists every Service the informer holds (PTR lookups scan
// them: a student's reverse lookup is rare, the list short).
func (v *listerView) allServices() []*v1.Service {
	objs := v.svc.List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok {
			out = append(out, s)
		}
	}
	return out
}

// ReverseName is the in-addr.arpa name of IPv4 address ip ("" for
// anything else).
func ReverseName(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return ""
	}
	b := a.As4()
	return strconv.Itoa(int(b[3])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[0])) + ".in-addr.arpa"
}
