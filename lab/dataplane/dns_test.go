package dataplane

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

const dnsIP = "10.96.0.254"

// dnsWorld is the fixture world with kube-dns and one CoreDNS Pod on
// node B in state ("ready", "notready"; "" for no kube-dns at all).
func dnsWorld(state string) *world {
	w := baseWorld(v1.ServiceExternalTrafficPolicyCluster)
	lb := instanceLB(cloud.TargetHealthy, cloud.TargetHealthy, "")
	w.state.LoadBalancers = []cloud.LoadBalancer{lb}
	if state == "" {
		return w
	}
	w.objs.services = append(w.objs.services, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: DNSServiceNamespace, Name: DNSServiceName},
		Spec: v1.ServiceSpec{ClusterIP: dnsIP, ClusterIPs: []string{dnsIP}, Ports: []v1.ServicePort{
			{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
		}},
	})
	pod := testPod("coredns-1", nodeB, "10.244.1.9", "registry.k8s.io/coredns/coredns:v1.14.6")
	pod.Namespace = DNSServiceNamespace
	w.objs.pods = append(w.objs.pods, pod)
	sl := testSlice("kube-dns-x", ep{pod, state})
	sl.Namespace = DNSServiceNamespace
	sl.Labels[discoveryv1.LabelServiceName] = DNSServiceName
	sl.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("dns"), Protocol: ptr.To(v1.ProtocolUDP), Port: ptr.To[int32](53)}}
	w.objs.slices = append(w.objs.slices, sl)
	return w
}

func TestLookup(t *testing.T) {
	webFQDN := "web.default.svc.cluster.local"
	for _, tc := range []struct {
		name    string
		world   func() *world
		dns     DNSConfig
		from    func(w *world) *v1.Pod
		query   string
		want    []string
		nx      bool
		timeout bool
	}{
		{name: "answered by the data plane without ThroughService", world: func() *world { return dnsWorld("") }, query: webFQDN, want: []string{"10.96.0.10"}},
		{name: "through a ready CoreDNS on another node", world: func() *world { return dnsWorld("ready") }, dns: DNSConfig{ThroughService: true}, query: webFQDN + ".", want: []string{"10.96.0.10"}},
		{name: "no kube-dns Service", world: func() *world { return dnsWorld("") }, dns: DNSConfig{ThroughService: true}, query: webFQDN, timeout: true},
		{name: "no ready endpoint", world: func() *world { return dnsWorld("notready") }, dns: DNSConfig{ThroughService: true}, query: webFQDN, timeout: true},
		{name: "no route to the CoreDNS Pod's node", world: func() *world {
			w := dnsWorld("ready")
			w.state.Routes = w.state.Routes[:1]
			return w
		}, dns: DNSConfig{ThroughService: true}, query: webFQDN, timeout: true},
		{name: "nothing listens on 53", world: func() *world { return dnsWorld("ready") },
			dns: DNSConfig{ThroughService: true, Listens: func(*v1.Pod, int32) bool { return false }}, query: webFQDN, timeout: true},
		{name: "listening CoreDNS", world: func() *world { return dnsWorld("ready") },
			dns: DNSConfig{ThroughService: true, Listens: func(p *v1.Pod, port int32) bool { return p.Name == "coredns-1" && port == 53 }}, query: webFQDN, want: []string{"10.96.0.10"}},
		{name: "dnsPolicy Default knows no cluster names", world: func() *world { return dnsWorld("ready") }, dns: DNSConfig{ThroughService: true},
			from: func(w *world) *v1.Pod {
				p := w.podByName("web-a").DeepCopy()
				p.Spec.DNSPolicy = v1.DNSDefault
				return p
			}, query: webFQDN, nx: true},
		{name: "dnsPolicy Default resolves a load balancer", world: func() *world { return dnsWorld("") }, dns: DNSConfig{ThroughService: true},
			from: func(w *world) *v1.Pod {
				p := w.podByName("web-a").DeepCopy()
				p.Spec.DNSPolicy = v1.DNSDefault
				return p
			}, query: "aweb-0123456789.elb.ap-northeast-1.ccmlab.internal"},
		{name: "from outside the Pods", world: func() *world { return dnsWorld("") }, dns: DNSConfig{ThroughService: true},
			from: func(*world) *v1.Pod { return nil }, query: webFQDN, want: []string{"10.96.0.10"}},
		{name: "a Pod A record", world: func() *world { return dnsWorld("ready") }, dns: DNSConfig{ThroughService: true}, query: "10-244-7-7.default.pod.cluster.local", want: []string{"10.244.7.7"}},
		{name: "an Internet name", world: func() *world { return dnsWorld("ready") }, dns: DNSConfig{ThroughService: true}, query: "example.com", nx: true},
		{name: "an unknown Service", world: func() *world { return dnsWorld("ready") }, dns: DNSConfig{ThroughService: true}, query: "nope.default.svc.cluster.local", nx: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			d := w.dataplane(t)
			d.cfg.DNS = tc.dns
			from := w.podByName("web-a")
			if tc.from != nil {
				from = tc.from(w)
			}
			ans, err := d.Lookup(from, tc.query, TypeA)
			if tc.timeout {
				if !errors.Is(err, ErrDNSTimeout) {
					t.Fatalf("got %+v, %v; want ErrDNSTimeout", ans, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ans.NXDomain != tc.nx || (tc.want != nil && !slices.Equal(ans.Addrs, tc.want)) {
				t.Errorf("got %+v, want %v (NXDOMAIN %v)", ans, tc.want, tc.nx)
			}
			if !tc.nx && tc.want == nil && len(ans.Addrs) == 0 {
				t.Errorf("no address for %s", tc.query)
			}
		})
	}
}

// TestDNSServer: kube-dns's address once it exists, else the tenth of
// the Service range.
func TestDNSServer(t *testing.T) {
	if got := dnsWorld("ready").dataplane(t).DNSServer(); got != dnsIP {
		t.Errorf("with kube-dns: %s, want %s", got, dnsIP)
	}
	w := dnsWorld("")
	w.objs.services = append(w.objs.services, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec:       v1.ServiceSpec{ClusterIP: "172.20.0.1", ClusterIPs: []string{"172.20.0.1"}},
	})
	if got := w.dataplane(t).DNSServer(); got != "172.20.0.10" {
		t.Errorf("without kube-dns: %s, want 172.20.0.10", got)
	}
}

// TestNodeResolvConf: AmazonProvidedDNS at the VPC's base plus two, and
// the private names' domain.
func TestNodeResolvConf(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	d := dnsWorld("").dataplane(t)
	d.cfg.Cloud = c
	want := "search ap-northeast-1.compute.internal\nnameserver 10.0.0.2\n"
	if got := d.NodeResolvConf(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func (o *objects) allServices() []*v1.Service { return o.services }

// TestSRVAndPTR: the specification's SRV and PTR records for a Service
// with a ClusterIP and a headless one.
func TestSRVAndPTR(t *testing.T) {
	w := dnsWorld("")
	w.objs.services = append(w.objs.services, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:       v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Ports: []v1.ServicePort{{Name: "pg", Protocol: v1.ProtocolTCP, Port: 5432}}},
	})
	sl := testSlice("db-x", ep{w.podByName("web-a"), "ready"}, ep{w.podByName("web-b"), "notready"})
	sl.Labels[discoveryv1.LabelServiceName] = "db"
	sl.Endpoints[0].Hostname = ptr.To("db-0")
	w.objs.slices = append(w.objs.slices, sl)
	d := w.dataplane(t)
	for _, tc := range []struct {
		name  string
		qtype uint16
		srv   []SRVRecord
		ptr   []string
		nx    bool
	}{
		{"_http._tcp.web.default.svc.cluster.local", TypeSRV, []SRVRecord{{10, 100, 80, "web.default.svc.cluster.local"}}, nil, false},
		{"_pg._tcp.db.default.svc.cluster.local", TypeSRV, []SRVRecord{{10, 100, 5432, "db-0.db.default.svc.cluster.local"}}, nil, false},
		{"_http._udp.web.default.svc.cluster.local", TypeSRV, nil, nil, true},
		{"_nope._tcp.web.default.svc.cluster.local", TypeSRV, nil, nil, true},
		{"_http._tcp.web.default.svc.cluster.local", TypeA, nil, nil, false},
		{ReverseName("10.96.0.10"), TypePTR, nil, []string{"web.default.svc.cluster.local"}, false},
		{ReverseName(podAIP), TypePTR, nil, []string{"db-0.db.default.svc.cluster.local"}, false},
		{ReverseName(podBIP), TypePTR, nil, nil, true},
		{"1.2.3.in-addr.arpa", TypePTR, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans, err := d.Resolve(tc.name, tc.qtype)
			if err != nil {
				t.Fatal(err)
			}
			if ans.NXDomain != tc.nx || !slices.Equal(ans.SRV, tc.srv) || !slices.Equal(ans.PTR, tc.ptr) {
				t.Errorf("got %+v, want SRV %v PTR %v NXDOMAIN %v", ans, tc.srv, tc.ptr, tc.nx)
			}
		})
	}
}
