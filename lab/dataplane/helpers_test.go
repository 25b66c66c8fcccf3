package dataplane

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// objects is a clusterView over plain slices, for table tests. Its lookups
// scan; the matching rules are the same helpers the informer view uses.
type objects struct {
	services []*v1.Service
	slices   []*discoveryv1.EndpointSlice
	nodeList []*v1.Node
	pods     []*v1.Pod
}

func (o *objects) service(ns, name string) *v1.Service {
	for _, s := range o.services {
		if s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

func (o *objects) serviceByNodePort(port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range o.services {
		if sp := nodePortOf(s, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (o *objects) serviceByHealthCheckNodePort(port int32) *v1.Service {
	for _, s := range o.services {
		if s.Spec.HealthCheckNodePort == port {
			return s
		}
	}
	return nil
}

func (o *objects) serviceByClusterIP(ip string, port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range o.services {
		if sp := clusterIPPortOf(s, ip, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (o *objects) endpointSlices(ns, service string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range o.slices {
		if s.Namespace == ns && s.Labels[discoveryv1.LabelServiceName] == service {
			out = append(out, s)
		}
	}
	return out
}

func (o *objects) node(name string) *v1.Node {
	for _, n := range o.nodeList {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (o *objects) nodes() []*v1.Node { return o.nodeList }

func (o *objects) nodeByInstanceID(id string) *v1.Node {
	for _, n := range o.nodeList {
		if providerInstanceID(n.Spec.ProviderID) == id {
			return n
		}
	}
	return nil
}

func (o *objects) pod(ns, name string) *v1.Pod {
	for _, p := range o.pods {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

func (o *objects) podByIP(ip string) *v1.Pod {
	for _, p := range o.pods {
		if p.Status.PodIP == ip {
			return p
		}
	}
	return nil
}

// The fixture world: two nodes in two zones, each with its podCIDR routed
// to its instance, and a Service "default/web" (port 80 -> 8080, NodePort
// 30080) with one Pod on each node.
const (
	instA   = "i-0aaaaaaaaaaaaaaaa"
	instB   = "i-0bbbbbbbbbbbbbbbb"
	instC   = "i-0cccccccccccccccc" // a node without Pods
	nodeA   = "ip-10-0-0-4.ap-northeast-1.compute.internal"
	nodeB   = "ip-10-0-16-4.ap-northeast-1.compute.internal"
	nodeC   = "ip-10-0-32-4.ap-northeast-1.compute.internal"
	ipA     = "10.0.0.4"
	ipB     = "10.0.16.4"
	ipC     = "10.0.32.4"
	podAIP  = "10.244.0.5"
	podBIP  = "10.244.1.5"
	vpcCIDR = "10.0.0.0/16"
	client  = "203.0.113.10"
)

func testNode(name, ip, inst, podCIDR string, ready bool) *v1.Node {
	status := v1.ConditionTrue
	if !ready {
		status = v1.ConditionFalse
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{ProviderID: "aws:///ap-northeast-1a/" + inst, PodCIDR: podCIDR},
		Status: v1.NodeStatus{
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: status}},
		},
	}
}

func testService(policy v1.ServiceExternalTrafficPolicy) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			ClusterIP:             "10.96.0.10",
			ClusterIPs:            []string{"10.96.0.10"},
			Selector:              map[string]string{"app": "web"},
			ExternalTrafficPolicy: policy,
			Ports: []v1.ServicePort{{
				Name: "http", Protocol: v1.ProtocolTCP, Port: 80,
				TargetPort: intstr.FromInt32(8080), NodePort: 30080,
			}},
		},
	}
	if policy == v1.ServiceExternalTrafficPolicyLocal {
		s.Spec.HealthCheckNodePort = 32000
	}
	return s
}

func testPod(name, node, ip, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Name: "web", Image: image, Ports: []v1.ContainerPort{{ContainerPort: 8080}},
		}}},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		},
	}
}

// ep describes one endpoint for testSlice: "ready", "notready" or
// "terminating" (serving while terminating).
type ep struct {
	pod   *v1.Pod
	state string
}

func testSlice(name string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for _, e := range eps {
		c := discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}
		switch e.state {
		case "notready":
			c = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(false)}
		case "terminating":
			c = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.pod.Status.PodIP},
			Conditions: c,
			NodeName:   ptr.To(e.pod.Spec.NodeName),
			TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: e.pod.Namespace, Name: e.pod.Name},
		})
	}
	return s
}

func testInstances() []cloud.Instance {
	mk := func(id, dns, ip string) cloud.Instance {
		return cloud.Instance{ID: id, Name: dns, PrivateDNSName: dns, PrivateIP: ip, State: cloud.InstanceRunning}
	}
	return []cloud.Instance{mk(instA, nodeA, ipA), mk(instB, nodeB, ipB), mk(instC, nodeC, ipC)}
}

func testRoutes() []cloud.Route {
	return []cloud.Route{
		{DestinationCIDR: "10.244.0.0/24", InstanceID: instA, State: cloud.RouteActive},
		{DestinationCIDR: "10.244.1.0/24", InstanceID: instB, State: cloud.RouteActive},
		{DestinationCIDR: "10.244.2.0/24", InstanceID: instC, State: cloud.RouteActive},
	}
}

// instanceLB is an instance-mode load balancer on the fixture's NodePort
// with the given target healths for instances A, B and C.
func instanceLB(hA, hB, hC cloud.TargetHealth) cloud.LoadBalancer {
	lb := cloud.LoadBalancer{
		Name: "aweb", DNSName: "aweb-0123456789.elb.ap-northeast-1.ccmlab.internal", TargetType: cloud.TargetTypeInstance,
		Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}},
		Tags:      map[string]string{cloud.ServiceTag: "default/web"},
	}
	for _, t := range []struct {
		id string
		h  cloud.TargetHealth
	}{{instA, hA}, {instB, hB}, {instC, hC}} {
		if t.h != "" {
			lb.Targets = append(lb.Targets, cloud.Target{ID: t.id, Port: 30080, Health: t.h})
		}
	}
	return lb
}

// world is one test's cluster and cloud.
type world struct {
	objs    objects
	state   cloud.State
	overlay bool
}

func baseWorld(policy v1.ServiceExternalTrafficPolicy) *world {
	return &world{
		objs: objects{
			services: []*v1.Service{testService(policy)},
			nodeList: []*v1.Node{
				testNode(nodeA, ipA, instA, "10.244.0.0/24", true),
				testNode(nodeB, ipB, instB, "10.244.1.0/24", true),
				testNode(nodeC, ipC, instC, "10.244.2.0/24", true),
			},
			pods: []*v1.Pod{
				testPod("web-a", nodeA, podAIP, "nginx:1.27"),
				testPod("web-b", nodeB, podBIP, "ghcr.io/ccmlab/echo:v1"),
			},
		},
		state: cloud.State{Instances: testInstances(), Routes: testRoutes()},
	}
}

func (w *world) podByName(name string) *v1.Pod { return w.objs.pod("default", name) }

// dataplane builds a synced Dataplane over w without informers or
// listeners, so the routing code runs exactly as for a real request.
func (w *world) dataplane(t *testing.T) *Dataplane {
	t.Helper()
	return newStaticDataplane(&w.objs, w.state, w.overlay, testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)))
}

func newStaticDataplane(view clusterView, st cloud.State, overlay bool, clk clock.WithTicker) *Dataplane {
	d := &Dataplane{
		log:       slog.New(slog.DiscardHandler),
		clock:     clk,
		vpc:       vpcCIDR,
		overlay:   overlay,
		view:      view,
		rr:        roundRobin{next: map[string]uint64{}},
		traces:    newTraceLog(16),
		listeners: map[listenerKey]*lbListener{},
		syncedCh:  make(chan struct{}),
		done:      make(chan struct{}),
	}
	d.cloudView.Store(newCloudView(st, vpcCIDR))
	close(d.syncedCh)
	return d
}

func hopKinds(tr Trace) string {
	kinds := make([]string, len(tr.Hops))
	for i, h := range tr.Hops {
		kinds[i] = h.Kind
	}
	return strings.Join(kinds, ",")
}
