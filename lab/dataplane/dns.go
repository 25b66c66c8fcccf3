package dataplane

import (
	"errors"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Cluster DNS as CoreDNS's kubernetes plugin answers it (the DNS
// specification of Kubernetes,
// https://github.com/kubernetes/dns/blob/master/docs/specification.md,
// with kubeadm's Corefile: "kubernetes cluster.local in-addr.arpa
// ip6.arpa { pods insecure ... }" and "forward . /etc/resolv.conf"),
// for the lab's Pods' resolvers (lab/podruntime) and for anyone else who
// needs the lab's names resolved. The API:
//
//   - Lookup(from, name, qtype): one query for a fully qualified name
//     (search domains and ndots are the client's business) from Pod
//     from, the way the packet goes. With DNSConfig.ThroughService (the
//     served lab, whose kube-system has CoreDNS: app/sim/kubesystem.go)
//     the query is a UDP packet to the kube-dns Service's ClusterIP:53,
//     DNATed by kube-proxy on from's node to one ready endpoint and
//     carried there as any packet (routes, overlay); it is answered only
//     if a DNS server listens there (DNSConfig.Listens: CoreDNS's process
//     in lab/podruntime). No Service, no ready endpoint, a dropped packet
//     or nothing listening is ErrDNSTimeout, what a resolver reports as
//     ";; connection timed out; no servers could be reached". Without
//     ThroughService (test worlds, a lab attached to a cluster whose
//     CoreDNS does not run in the lab) the data plane answers itself. A
//     Pod with dnsPolicy Default (CoreDNS's own, host-network Pods)
//     asks the VPC's resolver instead: no cluster names, the rest alike.
//   - Resolve(name, qtype): the answer alone, as CoreDNS computes it,
//     for a resolver outside any Pod (the student's shell: ccmlab curl,
//     a DNS listener); nil from is allowed in Lookup for the same.
//   - DNSServer(): the cluster DNS address (kube-dns's ClusterIP).
//   - NodeResolvConf(): the nodes' resolv.conf (the VPC's resolver).
//
// The records:
//
//   - <svc>.<ns>.svc.cluster.local: the ClusterIP; a headless Service's
//     ready endpoint addresses; an ExternalName Service's CNAME.
//   - <hostname>.<svc>.<ns>.svc.cluster.local: a headless Service's
//     endpoint with that hostname; <a-b-c-d>.<svc>.<ns>.svc.cluster.local
//     one with that address.
//   - <a-b-c-d>.<ns>.pod.cluster.local: a-b-c-d as an address
//     ("pods insecure": no check that such a Pod exists).
//   - a load balancer's DNS name: its addresses inside the VPC
//     (lbAddresses), as AWS's resolver answers from the VPC (CoreDNS
//     forwards there).
//   - a node's name: its InternalIP (the VPC's resolver).
//
// Anything else is NXDOMAIN: the lab has no Internet to forward to. No
// goroutine and no cache per query: each answer is read from the
// informers' stores.

// ClusterDomain is the cluster's DNS domain (kubelet --cluster-domain).
const ClusterDomain = "cluster.local"

// DNS query types the resolvers ask.
const (
	TypeA     uint16 = 1
	TypeCNAME uint16 = 5
	TypeAAAA  uint16 = 28
	TypeSRV   uint16 = 33
)

// DNSAnswer is the answer to one query. NXDomain: the name does not
// exist; no Addrs and no CNAME without NXDomain: it exists, with no
// record of that type.
type DNSAnswer struct {
	Name     string
	Addrs    []string
	CNAME    string
	SRV      []SRVRecord // TypeSRV (dnsrecords.go)
	PTR      []string    // TypePTR (dnsrecords.go)
	NXDomain bool
}

// ErrDNSTimeout: the query reached no DNS server (no kube-dns Service,
// no ready CoreDNS endpoint, a dropped packet, nothing listening on 53).
var ErrDNSTimeout = errors.New("connection timed out; no servers could be reached")

// DNSConfig says where Pods' queries go (see above).
type DNSConfig struct {
	// ThroughService sends each query to a ready endpoint of the
	// kube-dns Service in kube-system.
	ThroughService bool
	// Listens reports whether a process in pod listens on port (the
	// container runtime's); nil: every endpoint Pod answers.
	Listens func(pod *v1.Pod, port int32) bool
}

// DNSServiceNamespace and DNSServiceName name the cluster DNS Service
// (kubeadm's, kept under kube-dns's name for compatibility).
const (
	DNSServiceNamespace = "kube-system"
	DNSServiceName      = "kube-dns"
)

// Lookup answers a query for the fully qualified name (a trailing dot is
// optional) from Pod from (nil: from outside the Pods, answered as
// Resolve).
func (d *Dataplane) Lookup(from *v1.Pod, name string, qtype uint16) (DNSAnswer, error) {
	if !d.isSynced() {
		return DNSAnswer{}, requestErrorf(ReasonNotSynced, "the data plane has not synced yet")
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if from != nil && usesNodeDNS(from) {
		// The VPC's resolver: it knows no cluster names.
		if name == ClusterDomain || strings.HasSuffix(name, "."+ClusterDomain) {
			return DNSAnswer{Name: name, NXDomain: true}, nil
		}
	} else if from != nil && d.cfg.DNS.ThroughService {
		if err := d.reachDNS(from); err != nil {
			return DNSAnswer{}, err
		}
	}
	return d.answerFor(name, qtype), nil
}

// Resolve is the answer CoreDNS gives for name, whoever asks.
func (d *Dataplane) Resolve(name string, qtype uint16) (DNSAnswer, error) {
	if !d.isSynced() {
		return DNSAnswer{}, requestErrorf(ReasonNotSynced, "the data plane has not synced yet")
	}
	return d.answerFor(strings.ToLower(strings.TrimSuffix(name, ".")), qtype), nil
}

func (d *Dataplane) answerFor(name string, qtype uint16) DNSAnswer {
	ans := DNSAnswer{Name: name}
	if strings.HasPrefix(name, "_") {
		recs, ok := d.srv(name)
		ans.NXDomain = !ok
		if qtype == TypeSRV {
			ans.SRV = recs
		}
		return ans
	}
	if strings.HasSuffix(name, ".in-addr.arpa") {
		names, ok := d.ptr(name)
		ans.NXDomain = !ok
		if qtype == TypePTR {
			ans.PTR = names
		}
		return ans
	}
	addrs, cname, ok := d.resolve(name)
	if !ok {
		ans.NXDomain = true
		return ans
	}
	ans.CNAME = cname
	if qtype == TypeA {
		ans.Addrs = addrs
	}
	return ans
}

// usesNodeDNS: the kubelet gives pod the node's resolv.conf (dnsPolicy
// Default, or the host network without ClusterFirstWithHostNet;
// pkg/kubelet/network/dns/dns.go, getPodDNSType).
func usesNodeDNS(pod *v1.Pod) bool {
	switch pod.Spec.DNSPolicy {
	case v1.DNSDefault:
		return true
	case v1.DNSClusterFirstWithHostNet, v1.DNSNone:
		return false
	}
	return pod.Spec.HostNetwork
}

// reachDNS carries one query from Pod from to a CoreDNS Pod: kube-dns's
// ClusterIP on port 53/UDP, kube-proxy's DNAT on from's node, the path
// to the endpoint, and a server listening there. The packet leaves no
// trace: every name a curl resolves would otherwise crowd out the
// requests the page draws.
func (d *Dataplane) reachDNS(from *v1.Pod) error {
	e := d.env()
	server := d.DNSServer()
	svc, sp := e.cluster.serviceByClusterIP(server, 53, v1.ProtocolUDP)
	if svc == nil {
		return ErrDNSTimeout
	}
	tr := Trace{ClientIP: from.Status.PodIP}
	got := e.routeClusterIP(&tr, e.cluster.node(from.Spec.NodeName), svc, sp, server)
	if got.pod == nil {
		return ErrDNSTimeout
	}
	if l := d.cfg.DNS.Listens; l != nil && !l(got.pod, got.port) {
		return ErrDNSTimeout
	}
	return nil
}

func (d *Dataplane) resolve(name string) (addrs []string, cname string, ok bool) {
	e := d.env()
	if rest, found := strings.CutSuffix(name, ".svc."+ClusterDomain); found {
		labels := strings.Split(rest, ".")
		switch len(labels) {
		case 2:
			svc := e.cluster.service(labels[1], labels[0])
			if svc == nil {
				return nil, "", false
			}
			if svc.Spec.Type == v1.ServiceTypeExternalName {
				return nil, svc.Spec.ExternalName, true
			}
			if ips := clusterIPs(svc); len(ips) > 0 {
				return ips, "", true
			}
			return endpointAddrs(e.cluster.endpointSlices(svc.Namespace, svc.Name), ""), "", true
		case 3:
			svc := e.cluster.service(labels[2], labels[1])
			if svc == nil {
				return nil, "", false
			}
			got := endpointAddrs(e.cluster.endpointSlices(svc.Namespace, svc.Name), labels[0])
			return got, "", len(got) > 0
		}
		return nil, "", false
	}
	if rest, found := strings.CutSuffix(name, ".pod."+ClusterDomain); found {
		ip, ns, ok := strings.Cut(rest, ".")
		if !ok || strings.Contains(ns, ".") {
			return nil, "", false
		}
		a, err := netip.ParseAddr(strings.ReplaceAll(ip, "-", "."))
		if err != nil || !a.Is4() {
			return nil, "", false
		}
		return []string{a.String()}, "", true
	}
	for _, lb := range e.cloud.lbs {
		if strings.EqualFold(lb.DNSName, name) {
			return lbAddresses(lb), "", true
		}
	}
	if n := e.cluster.node(name); n != nil {
		if ip := e.nodeIP(n); ip != "" {
			return []string{ip}, "", true
		}
	}
	return nil, "", false
}

// endpointAddrs are the ready endpoint addresses of slices; with host,
// only the endpoint whose hostname (or dashed address) is host.
func endpointAddrs(sl []*discoveryv1.EndpointSlice, host string) []string {
	var out []string
	for _, s := range sl {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if host != "" {
					h := ""
					if ep.Hostname != nil {
						h = *ep.Hostname
					}
					if h != host && strings.ReplaceAll(a, ".", "-") != host {
						continue
					}
				}
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServicesFor lists the Services whose variables the kubelet gives a
// Pod in namespace ns: that namespace's, and "kubernetes" of default
// (pkg/kubelet/kubelet_pods.go, getServiceEnvVarMap), with a ClusterIP.
func (d *Dataplane) ServicesFor(ns string) []*v1.Service {
	lv, ok := d.view.(*listerView)
	if !ok {
		return nil
	}
	objs, _ := lv.svc.ByIndex(cache.NamespaceIndex, ns)
	var out []*v1.Service
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok && len(clusterIPs(s)) > 0 {
			out = append(out, s)
		}
	}
	if ns != "default" {
		if s := d.view.service("default", "kubernetes"); s != nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out
}

// NodeResolvConf is the nodes' /etc/resolv.conf, which the kubelet gives
// a Pod with dnsPolicy Default (and a host-network one): the VPC's
// resolver, AmazonProvidedDNS at the VPC range's base plus two
// (https://docs.aws.amazon.com/cdk/api/v1/python/aws_cdk.aws_ec2/CfnVPCProps.html,
// enable_dns_support), and the domain of the instances' private names.
func (d *Dataplane) NodeResolvConf() string {
	out := ""
	if r := d.cfg.Cloud; r != nil {
		out = "search " + r.Config().Region + ".compute.internal\n"
	}
	if pfx, err := netip.ParsePrefix(d.vpc); err == nil && pfx.Addr().Is4() {
		b := pfx.Masked().Addr().As4()
		b[3] += 2
		out += "nameserver " + netip.AddrFrom4(b).String() + "\n"
	}
	return out
}

// DNSServer is the cluster DNS address the kubelet writes into Pods'
// resolv.conf (--cluster-dns): kube-dns's ClusterIP when that Service
// exists, else the tenth address of the Service range (kubeadm's choice,
// 10.96.0.10 for 10.96.0.0/12), taken from the "kubernetes" Service's
// address, the range's first.
func (d *Dataplane) DNSServer() string {
	if s := d.view.service(DNSServiceNamespace, DNSServiceName); s != nil && len(clusterIPs(s)) > 0 {
		return clusterIPs(s)[0]
	}
	if s := d.view.service("default", "kubernetes"); s != nil && len(clusterIPs(s)) > 0 {
		if a, err := netip.ParseAddr(clusterIPs(s)[0]); err == nil && a.Is4() {
			b := a.As4()
			b[3] += 9
			return netip.AddrFrom4(b).String()
		}
	}
	return "10.96.0.10"
}
