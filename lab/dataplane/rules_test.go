package dataplane

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

const (
	cluster = v1.ServiceExternalTrafficPolicyCluster
	local   = v1.ServiceExternalTrafficPolicyLocal
)

// want is what a routed request should end with. Empty fields are not
// checked, except ExtraHop which always is.
type want struct {
	status   int
	pod      string
	podNode  string
	entry    string
	source   string
	extraHop bool
	policy   string
	hops     string
	errHas   string
}

func checkTrace(t *testing.T, tr Trace, w want) {
	t.Helper()
	if tr.Status != w.status {
		t.Errorf("status = %d, want %d (error %q)", tr.Status, w.status, tr.Error)
	}
	if tr.ExtraHop != w.extraHop {
		t.Errorf("extraHop = %v, want %v", tr.ExtraHop, w.extraHop)
	}
	for _, c := range []struct{ name, got, want string }{
		{"pod", tr.Pod, w.pod}, {"podNode", tr.PodNode, w.podNode}, {"entry", tr.EntryNode, w.entry},
		{"source seen by pod", tr.SourceIPSeenByPod, w.source}, {"policy", tr.Policy, w.policy}, {"hops", hopKinds(tr), w.hops},
	} {
		if c.want != "" && c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if w.errHas != "" && !strings.Contains(tr.Error, w.errHas) {
		t.Errorf("error = %q, want it to contain %q", tr.Error, w.errHas)
	}
	if w.errHas == "" && tr.Error != "" {
		t.Errorf("unexpected error %q", tr.Error)
	}
	checkErrorKey(t, tr)
	if tr.ID == "" || tr.Time.IsZero() {
		t.Errorf("trace without ID or time: %+v", tr)
	}
}

// TestNodePortRouting is kube-proxy's NodePort decision for both traffic
// policies, with the Pod on the receiving node, on another node, or absent.
func TestNodePortRouting(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.ServiceExternalTrafficPolicy
		eps    func(w *world) []ep
		entry  string
		want   want
	}{
		{
			name: "Cluster, Pod on the receiving node: no extra hop, still SNAT", policy: cluster,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-a"), "ready"}} },
			entry: nodeA,
			want: want{status: 200, pod: "default/web-a", podNode: nodeA, entry: nodeA, source: ipA, policy: PolicyCluster,
				hops: "client,node,nodeport,dnat,pod"},
		},
		{
			name: "Cluster, Pod on another node: extra hop, source is the receiving node", policy: cluster,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-b"), "ready"}} },
			entry: nodeA,
			want: want{status: 200, pod: "default/web-b", podNode: nodeB, entry: nodeA, source: ipA, extraHop: true, policy: PolicyCluster,
				hops: "client,node,nodeport,dnat,forward,pod"},
		},
		{
			name: "Local, Pod on the receiving node: client IP kept", policy: local,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-a"), "ready"}, {w.podByName("web-b"), "ready"}} },
			entry: nodeB,
			want: want{status: 200, pod: "default/web-b", podNode: nodeB, entry: nodeB, source: client, policy: PolicyLocal,
				hops: "client,node,nodeport,dnat,pod"},
		},
		{
			name: "Local, Pod only on another node: dropped", policy: local,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-b"), "ready"}} },
			entry: nodeA,
			want:  want{status: statusDropped, entry: nodeA, policy: PolicyLocal, hops: "client,node,nodeport", errHas: "no ready endpoint"},
		},
		{
			name: "Cluster, no endpoints: rejected", policy: cluster,
			eps:   func(w *world) []ep { return nil },
			entry: nodeA,
			want:  want{status: statusRejected, entry: nodeA, policy: PolicyCluster, errHas: "no ready endpoints"},
		},
		{
			name: "Cluster, only not-ready endpoints: rejected", policy: cluster,
			eps: func(w *world) []ep {
				return []ep{{w.podByName("web-a"), "notready"}, {w.podByName("web-b"), "notready"}}
			},
			entry: nodeA,
			want:  want{status: statusRejected, errHas: "no ready endpoints"},
		},
		{
			name: "Cluster, not-ready local Pod is skipped for a ready remote one", policy: cluster,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-a"), "notready"}, {w.podByName("web-b"), "ready"}} },
			entry: nodeA,
			want:  want{status: 200, pod: "default/web-b", source: ipA, extraHop: true},
		},
		{
			name: "Cluster, only a terminating Pod: still served while it drains", policy: cluster,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-b"), "terminating"}} },
			entry: nodeA,
			want:  want{status: 200, pod: "default/web-b", extraHop: true},
		},
		{
			name: "Local, not-ready local Pod: dropped even though a remote one is ready", policy: local,
			eps:   func(w *world) []ep { return []ep{{w.podByName("web-a"), "notready"}, {w.podByName("web-b"), "ready"}} },
			entry: nodeA,
			want:  want{status: statusDropped, errHas: "Local never forwards"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(tc.policy)
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", tc.eps(w)...)}
			d := w.dataplane(t)
			tr, err := d.Do(context.Background(), Request{Kind: KindNodePort, Node: tc.entry, Port: 30080})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, tc.want)
		})
	}
}

func TestClusterIPRouting(t *testing.T) {
	tests := []struct {
		name     string
		internal v1.ServiceInternalTrafficPolicy
		from     string
		want     want
	}{
		{"from node A, Pod on B: extra hop, source kept", v1.ServiceInternalTrafficPolicyCluster, nodeA,
			want{status: 200, pod: "default/web-b", entry: nodeA, source: ipA, extraHop: true, policy: PolicyCluster, hops: "client,node,dnat,forward,pod"}},
		{"from node B, Pod on B", v1.ServiceInternalTrafficPolicyCluster, nodeB,
			want{status: 200, pod: "default/web-b", entry: nodeB, source: ipB, policy: PolicyCluster, hops: "client,node,dnat,pod"}},
		{"internalTrafficPolicy Local from a node without the Pod: dropped", v1.ServiceInternalTrafficPolicyLocal, nodeA,
			want{status: statusDropped, policy: PolicyLocal, errHas: "internalTrafficPolicy Local"}},
		{"no node given: client outside any node", v1.ServiceInternalTrafficPolicyCluster, "",
			want{status: 200, pod: "default/web-b", source: client, hops: "client,dnat,pod"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(cluster)
			w.objs.services[0].Spec.InternalTrafficPolicy = ptr.To(tc.internal)
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			tr, err := w.dataplane(t).Do(context.Background(), Request{Kind: KindClusterIP, IP: "10.96.0.10", Port: 80, Node: tc.from})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, tc.want)
		})
	}
}

// TestLoadBalancerInstanceMode follows requests through an instance-mode
// load balancer: target choice by health, then the node's NodePort rules.
func TestLoadBalancerInstanceMode(t *testing.T) {
	tests := []struct {
		name       string
		policy     v1.ServiceExternalTrafficPolicy
		hA, hB, hC cloud.TargetHealth
		want       want
	}{
		{"only node A healthy, Pod on B, Cluster: extra hop", cluster, cloud.TargetHealthy, cloud.TargetUnhealthy, cloud.TargetUnhealthy,
			want{status: 200, pod: "default/web-b", entry: nodeA, source: ipA, extraHop: true, hops: "client,lb,node,nodeport,dnat,forward,pod"}},
		{"only node B healthy, Local: no extra hop, client IP kept", local, cloud.TargetUnhealthy, cloud.TargetHealthy, cloud.TargetUnhealthy,
			want{status: 200, pod: "default/web-b", entry: nodeB, source: client, policy: PolicyLocal}},
		{"none healthy yet: an initial target is used", cluster, cloud.TargetUnhealthy, cloud.TargetInitial, cloud.TargetUnhealthy,
			want{status: 200, entry: nodeB, pod: "default/web-b"}},
		{"all unhealthy: 503", cluster, cloud.TargetUnhealthy, cloud.TargetUnhealthy, cloud.TargetUnused,
			want{status: statusRejected, hops: "client,lb", errHas: "no healthy targets"}},
		{"no targets: 503", cluster, "", "", "",
			want{status: statusRejected, errHas: "no targets"}},
		{"Local, initial target without a Pod: dropped on the node", local, cloud.TargetInitial, "", "",
			want{status: statusDropped, entry: nodeA, errHas: "no ready endpoint"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(tc.policy)
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			w.state.LoadBalancers = []cloud.LoadBalancer{instanceLB(tc.hA, tc.hB, tc.hC)}
			tr, err := w.dataplane(t).Do(context.Background(), Request{Kind: KindLoadBalancer, LB: "aweb", Port: 80})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, tc.want)
			if tr.LB != "aweb" || tr.Service != "default/web" || tr.TargetType != "instance" {
				t.Errorf("LB %q, service %q, target type %q", tr.LB, tr.Service, tr.TargetType)
			}
		})
	}
}

// TestNLBFailsOpen: an NLB whose every target fails its health checks
// sends to all of them (never to an unused one); a Classic ELB or the
// lab's own load balancer sends to none (the table above).
func TestNLBFailsOpen(t *testing.T) {
	w := baseWorld(cluster)
	w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
	lb := instanceLB(cloud.TargetUnhealthy, cloud.TargetUnhealthy, cloud.TargetUnused)
	lb.Kind = cloud.LBKindNetwork
	w.state.LoadBalancers = []cloud.LoadBalancer{lb}
	d := w.dataplane(t)
	var entries []string
	for range 4 {
		tr, err := d.Do(context.Background(), Request{Kind: KindLoadBalancer, LB: "aweb"})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Status != 200 || len(tr.Hops) < 2 || tr.Hops[1].DetailKey != tracetext.HopPickedFailOpen {
			t.Fatalf("status %d, hops %+v: want 200 through a fail-open pick", tr.Status, tr.Hops)
		}
		entries = append(entries, tr.EntryNode)
	}
	if want := []string{nodeA, nodeB, nodeA, nodeB}; strings.Join(entries, " ") != strings.Join(want, " ") {
		t.Errorf("entry nodes %v, want %v (never the unused target)", entries, want)
	}
}

// TestLoadBalancerRoundRobin: with two healthy nodes and Cluster policy,
// consecutive requests alternate between the nodes, so exactly one of two
// takes the extra hop to the only Pod.
func TestLoadBalancerRoundRobin(t *testing.T) {
	w := baseWorld(cluster)
	w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
	w.state.LoadBalancers = []cloud.LoadBalancer{instanceLB(cloud.TargetHealthy, cloud.TargetHealthy, "")}
	d := w.dataplane(t)
	var entries []string
	extra := 0
	for range 4 {
		tr, err := d.Do(context.Background(), Request{Kind: KindLoadBalancer, LB: "aweb"})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, tr.EntryNode)
		if tr.ExtraHop {
			extra++
		}
	}
	if want := []string{nodeA, nodeB, nodeA, nodeB}; strings.Join(entries, " ") != strings.Join(want, " ") {
		t.Errorf("entry nodes %v, want %v", entries, want)
	}
	if extra != 2 {
		t.Errorf("%d of 4 requests took the extra hop, want 2", extra)
	}
}

// TestLoadBalancerIPMode: targets are Pod IPs; the load balancer reaches
// them only when they are VPC addresses or covered by a VPC route.
func TestLoadBalancerIPMode(t *testing.T) {
	tests := []struct {
		name   string
		podIP  string
		routes []cloud.Route
		want   want
	}{
		{"VPC address (Amazon VPC CNI): straight to the Pod", "10.0.16.100", nil,
			want{status: 200, pod: "default/web-b", entry: nodeB, source: client, hops: "client,lb,pod"}},
		{"podCIDR address with a VPC route", podBIP, testRoutes(),
			want{status: 200, pod: "default/web-b", source: client, hops: "client,lb,pod"}},
		{"podCIDR address without a route: unreachable", podBIP, nil,
			want{status: statusDropped, errHas: "cannot reach Pod IP"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(cluster)
			pod := w.podByName("web-b")
			pod.Status.PodIP, pod.Status.PodIPs = tc.podIP, []v1.PodIP{{IP: tc.podIP}}
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{pod, "ready"})}
			w.state.Routes = tc.routes
			w.state.LoadBalancers = []cloud.LoadBalancer{{
				Name: "k8s-default-web", DNSName: "k8s-default-web.elb", TargetType: cloud.TargetTypeIP,
				Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 8080}},
				Targets:   []cloud.Target{{ID: tc.podIP, Port: 8080, Health: cloud.TargetHealthy}},
				Tags:      map[string]string{cloud.StackTag: "default/web"},
			}}
			tr, err := w.dataplane(t).Do(context.Background(), Request{Kind: KindLoadBalancer, LB: "k8s-default-web.elb", Port: 80})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, tc.want)
			if tr.TargetType != "ip" || tr.Service != "default/web" {
				t.Errorf("target type %q service %q", tr.TargetType, tr.Service)
			}
		})
	}
}

// TestPodNetwork: the extra hop between nodes needs a VPC route to the
// Pod's node when Pod IPs are not VPC addresses, unless the CNI is an
// overlay.
func TestPodNetwork(t *testing.T) {
	tests := []struct {
		name    string
		routes  []cloud.Route
		overlay bool
		want    want
	}{
		{"route to the Pod's node", testRoutes(), false, want{status: 200, extraHop: true, pod: "default/web-b"}},
		{"no route (Route controller off)", nil, false, want{status: statusDropped, extraHop: true, errHas: "Route controller"}},
		{"route to the wrong instance", []cloud.Route{{DestinationCIDR: "10.244.1.0/24", InstanceID: instC, State: cloud.RouteActive}}, false,
			want{status: statusDropped, extraHop: true, errHas: "not to " + instB}},
		{"blackhole route", []cloud.Route{{DestinationCIDR: "10.244.1.0/24", InstanceID: instB, State: cloud.RouteBlackhole}}, false,
			want{status: statusDropped, extraHop: true, errHas: "blackhole"}},
		{"overlay network needs no route", nil, true, want{status: 200, extraHop: true, pod: "default/web-b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(cluster)
			w.overlay = tc.overlay
			w.state.Routes = tc.routes
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			tr, err := w.dataplane(t).Do(context.Background(), Request{Kind: KindNodePort, IP: ipA, Port: 30080})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, tc.want)
		})
	}
}

func TestDoBadInput(t *testing.T) {
	w := baseWorld(cluster)
	w.state.LoadBalancers = []cloud.LoadBalancer{instanceLB(cloud.TargetHealthy, "", "")}
	d := w.dataplane(t)
	tests := []struct {
		req    Request
		reason string
	}{
		{Request{Kind: "ping"}, ReasonInvalid},
		{Request{Kind: KindLoadBalancer, LB: "nope"}, ReasonUnknownLB},
		{Request{Kind: KindLoadBalancer, LB: "aweb", Port: 443}, ReasonNoListener},
		{Request{Kind: KindNodePort, Node: "nope", Port: 30080}, ReasonUnknownNode},
		{Request{Kind: KindNodePort, Node: nodeA, Port: 31999}, ReasonNoNodePort},
		{Request{Kind: KindClusterIP, IP: "10.96.0.10", Port: 443}, ReasonNoClusterIP},
		{Request{Kind: KindClusterIP, IP: "10.96.0.10", Port: 80, Node: "nope"}, ReasonUnknownNode},
		{Request{Kind: KindNodePort, Node: nodeA, Port: 30080, ClientIP: "not-an-ip"}, ReasonInvalid},
	}
	for _, tc := range tests {
		_, err := d.Do(context.Background(), tc.req)
		if !IsReason(err, tc.reason) {
			t.Errorf("Do(%+v) = %v, want reason %s", tc.req, err, tc.reason)
		}
	}
	if n := len(d.Traces()); n != 0 {
		t.Errorf("bad input left %d traces", n)
	}
	unsynced := &Dataplane{syncedCh: make(chan struct{})}
	if _, err := unsynced.Do(context.Background(), Request{Kind: KindNodePort}); !IsReason(err, ReasonNotSynced) {
		t.Errorf("unsynced Do = %v", err)
	}
}

// TestServiceEndpoints: slice ports match by name and protocol, duplicates
// across slices count once (the ready copy wins), nil conditions are ready.
func TestServiceEndpoints(t *testing.T) {
	w := baseWorld(cluster)
	a, b := w.podByName("web-a"), w.podByName("web-b")
	s1 := testSlice("s1", ep{a, "notready"})
	s2 := testSlice("s2", ep{a, "ready"}, ep{b, "ready"})
	s2.Endpoints[1].Conditions = discoveryv1.EndpointConditions{} // all nil: ready
	other := testSlice("s3", ep{b, "ready"})
	other.Ports[0].Name = ptr.To("metrics")
	got := serviceEndpoints(w.objs.services[0].Spec.Ports[0], []*discoveryv1.EndpointSlice{s1, s2, other})
	if len(got) != 2 {
		t.Fatalf("got %d endpoints, want 2: %+v", len(got), got)
	}
	for _, e := range got {
		if !e.Ready || e.Port != 8080 {
			t.Errorf("endpoint %+v: want ready on 8080", e)
		}
	}
	if got[0].IP != podAIP || got[0].Node != nodeA || got[0].PodName != "web-a" {
		t.Errorf("first endpoint %+v", got[0])
	}
}

func TestNodeIdentity(t *testing.T) {
	w := baseWorld(cluster)
	// Node C before the Node controller ran: no providerID, no addresses.
	c := w.objs.node(nodeC)
	c.Spec.ProviderID, c.Status.Addresses = "", nil
	e := w.dataplane(t).env()
	if got := e.nodeIP(c); got != ipC {
		t.Errorf("nodeIP of an uninitialized node = %q, want the instance's %q", got, ipC)
	}
	if n := e.nodeForInstance(e.cloud.instByID[instC]); n == nil || n.Name != nodeC {
		t.Errorf("node for %s by DNS name = %v", instC, n)
	}
	// Node B renamed: only the providerID links it to its instance.
	w.objs.node(nodeB).Name = "renamed"
	if n := e.nodeForInstance(e.cloud.instByID[instB]); n == nil || n.Name != "renamed" {
		t.Errorf("node for %s by providerID = %v", instB, n)
	}
	if got := providerInstanceID("kubevirt://vm-1"); got != "" {
		t.Errorf("providerInstanceID(kubevirt) = %q", got)
	}
}

func TestServiceForLB(t *testing.T) {
	w := baseWorld(cluster)
	e := w.dataplane(t).env()
	lb := instanceLB(cloud.TargetHealthy, "", "")
	if s := e.serviceForLB(&lb); s == nil || s.Name != "web" {
		t.Errorf("by tag: %v", s)
	}
	lb.Tags = nil
	if s := e.serviceForLB(&lb); s == nil || s.Name != "web" {
		t.Errorf("by NodePort: %v", s)
	}
	lb.Listeners[0].TargetPort = 31111
	if s := e.serviceForLB(&lb); s != nil {
		t.Errorf("unrelated LB mapped to %s", s.Name)
	}
}
