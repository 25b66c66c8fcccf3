package check

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cloudproviderapi "k8s.io/cloud-provider/api"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The table tests below evaluate every check kind against a small lab
// made of a real in-memory cloud and a fake clientset, once where it must
// pass and once where it must fail: a check that cannot fail is a bug.

type fakeControllers map[string]bool

func (f fakeControllers) Status() map[string]bool {
	out := map[string]bool{}
	for k, v := range f {
		out[k] = v
	}
	return out
}
func (f fakeControllers) Enable(n string) error  { f[n] = true; return nil }
func (f fakeControllers) Disable(n string) error { f[n] = false; return nil }

type fakeDataplane struct {
	do func(r dataplane.Request, i int) dataplane.Trace
	n  int
}

func (d *fakeDataplane) Do(_ context.Context, r dataplane.Request) (dataplane.Trace, error) {
	if d.do == nil {
		return dataplane.Trace{}, &dataplane.RequestError{Reason: dataplane.ReasonInvalid, Message: "no data plane"}
	}
	d.n++
	tr := d.do(r, d.n)
	tr.ID = fmt.Sprint(d.n)
	return tr, nil
}
func (d *fakeDataplane) Traces() []dataplane.Trace { return nil }

type fakeFlows map[string]flow.ServiceFlow

func (f fakeFlows) ServiceFlow(key string) (flow.ServiceFlow, bool) { s, ok := f[key]; return s, ok }
func (f fakeFlows) NodeFlow(string) (flow.NodeFlow, bool)           { return flow.NodeFlow{}, false }

type fixture struct {
	t     *testing.T
	ctx   context.Context
	cloud *cloud.Cloud
	objs  []runtime.Object
	ctrl  fakeControllers
	dp    *fakeDataplane
	flows fakeFlows
	start time.Time
	hist  *history.Recorder
	since uint64
	// causes answers causeNamed (checks_lifecycle_test.go).
	causes CauseNamer
	// infra, when not nil, is the management cluster's objects
	// (checks_kubevirt_test.go).
	infra []runtime.Object
}

func newFixture(t *testing.T) *fixture {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.New(history.Config{Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: context.Background(), cloud: c, ctrl: fakeControllers{"node": true, "nodelifecycle": true, "route": true, "service": true},
		dp: &fakeDataplane{}, flows: fakeFlows{}, hist: h}
}

func (f *fixture) env() Env {
	p, _ := profile.Get("aws")
	e := Env{Client: fake.NewClientset(f.objs...), Cloud: f.cloud, Flow: f.flows, Controllers: f.ctrl, Dataplane: f.dp, Profile: p, History: f.hist, Causes: f.causes}
	if f.infra != nil {
		e.Infra = fake.NewClientset(f.infra...)
	}
	return e
}

func (f *fixture) eval(c format.CheckSpec) Outcome {
	f.t.Helper()
	if err := Validate(c); err != nil {
		f.t.Fatalf("invalid spec: %v", err)
	}
	return EvaluateStep(f.ctx, f.env(), Input{Start: f.start, Since: f.since}, c)
}

func (f *fixture) launch() cloud.Instance {
	inst, err := f.cloud.RunInstance(f.ctx, cloud.RunInstanceInput{})
	if err != nil {
		f.t.Fatal(err)
	}
	return inst
}

// node adds an initialized, Ready Node for inst with podCIDR 10.244.<i>.0/24.
func (f *fixture) node(inst cloud.Instance, i int, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.PrivateDNSName, Labels: map[string]string{
			flow.LabelZone: inst.Zone, flow.LabelRegion: f.cloud.Config().Region, flow.LabelInstanceType: inst.InstanceType,
		}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///" + inst.Zone + "/" + inst.ID, PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: inst.PrivateIP}, {Type: corev1.NodeHostName, Address: inst.PrivateDNSName}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mods {
		m(n)
	}
	f.objs = append(f.objs, n)
	return n
}

func tainted(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule})
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }

func (f *fixture) svc(name string, mods ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: format.Namespace, UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
	}
	for _, m := range mods {
		m(s)
	}
	f.objs = append(f.objs, s)
	return s
}

func local(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	s.Spec.HealthCheckNodePort = 32000
}

func (f *fixture) event(s *corev1.Service, uid types.UID, reason, msg string) {
	f.objs = append(f.objs, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", s.Name, len(f.objs)), Namespace: format.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: format.Namespace, Name: s.Name, UID: uid},
		Reason:         reason, Message: msg, Source: corev1.EventSource{Component: "service-controller"},
	})
}

func (f *fixture) pod(name, node string, phase corev1.PodPhase, ready bool, schedMsg string) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: format.Namespace, Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if schedMsg != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: schedMsg})
	}
	if ready {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	}
	f.objs = append(f.objs, p)
}

// endpoints adds an EndpointSlice with one ready endpoint per ip@node.
func (f *fixture) endpoints(s *corev1.Service, eps ...string) {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.Name + "-es", Namespace: format.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: s.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, ep := range eps {
		ip, node, _ := strings.Cut(ep, "@")
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	f.objs = append(f.objs, es)
}

// lb creates the Service's load balancer in the cloud with targets
// "id:port=health" and, when hc > 0, a health check on that port.
func (f *fixture) lb(s *corev1.Service, tt cloud.TargetType, hc int32, targets ...string) cloud.LoadBalancer {
	name := lbName(s)
	_, err := f.cloud.CreateLoadBalancer(f.ctx, cloud.CreateLoadBalancerInput{Name: name, TargetType: tt, Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}})
	if err != nil {
		f.t.Fatal(err)
	}
	var ts []cloud.Target
	health := map[string]cloud.TargetHealth{}
	for _, spec := range targets {
		idPort, h, _ := strings.Cut(spec, "=")
		id, port, _ := strings.Cut(idPort, ":")
		var p int32
		fmt.Sscan(port, &p)
		ts = append(ts, cloud.Target{ID: id, Port: p})
		health[id] = cloud.TargetHealth(h)
	}
	if len(ts) > 0 {
		if err := f.cloud.RegisterTargets(f.ctx, name, ts); err != nil {
			f.t.Fatal(err)
		}
	}
	if hc > 0 {
		if err := f.cloud.ConfigureHealthCheck(f.ctx, name, cloud.HealthCheck{Protocol: "HTTP", Port: hc, Path: "/healthz"}); err != nil {
			f.t.Fatal(err)
		}
	}
	for id, h := range health {
		if h != "" {
			if err := f.cloud.SetTargetHealth(name, id, 0, h, ""); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	lb, _ := f.cloud.LookupLoadBalancer(name)
	return lb
}

func (f *fixture) route(cidr, instID string) {
	if err := f.cloud.CreateRoute(f.ctx, cidr, instID); err != nil {
		f.t.Fatal(err)
	}
}

// deletingNodeEvent adds the Event the node-lifecycle controller records
// before it deletes a Node (component: who recorded it).
func (f *fixture) deletingNodeEvent(node, component string) {
	f.objs = append(f.objs, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: node + ".deleting", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: "uid-" + types.UID(node)},
		Reason:         "DeletingNode", Source: corev1.EventSource{Component: component},
		LastTimestamp: metav1.NewTime(time.Now()),
	})
}

func (f *fixture) terminate(inst cloud.Instance) {
	if _, err := f.cloud.TerminateInstance(f.ctx, inst.ID); err != nil {
		f.t.Fatal(err)
	}
}

func withIngress(host string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: host}}
	}
}

// two launches two instances with initialized Nodes.
func (f *fixture) two(mods ...func(*corev1.Node)) (cloud.Instance, cloud.Instance) {
	a, b := f.launch(), f.launch()
	f.node(a, 0, mods...)
	f.node(b, 1, mods...)
	return a, b
}

type checkCase struct {
	name  string
	spec  format.CheckSpec
	setup func(f *fixture)
	pass  bool
}

func checkCases() []checkCase {
	on, off := ptr.To(true), ptr.To(false)
	later := func(f *fixture) { f.start = time.Now().Add(time.Hour) }
	return append(append(evidenceCases(), extraCases()...), []checkCase{
		{"new node", format.CheckSpec{Kind: "newNodes"}, func(f *fixture) { f.two() }, true},
		{"no new node", format.CheckSpec{Kind: "newNodes"}, func(f *fixture) { f.two(); later(f) }, false},
		{"too few new nodes", format.CheckSpec{Kind: "newNodes", Min: 3}, func(f *fixture) { f.two() }, false},

		{"initialized", format.CheckSpec{Kind: "nodesInitialized", Nodes: "new"}, func(f *fixture) { f.two() }, true},
		{"still tainted", format.CheckSpec{Kind: "nodesInitialized"}, func(f *fixture) { f.two(tainted) }, false},
		{"initialized, none new", format.CheckSpec{Kind: "nodesInitialized", Nodes: "new"}, func(f *fixture) { f.two(); later(f) }, false},

		{"providerID", format.CheckSpec{Kind: "nodeProviderID"}, func(f *fixture) { f.two() }, true},
		{"no providerID", format.CheckSpec{Kind: "nodeProviderID"}, func(f *fixture) { f.two(func(n *corev1.Node) { n.Spec.ProviderID = "" }) }, false},
		{"wrong providerID", format.CheckSpec{Kind: "nodeProviderID"}, func(f *fixture) {
			f.two(func(n *corev1.Node) { n.Spec.ProviderID = "aws:///ap-northeast-1a/i-00000000000000000" })
		}, false},

		{"addresses", format.CheckSpec{Kind: "nodeAddresses"}, func(f *fixture) { f.two() }, true},
		{"wrong address", format.CheckSpec{Kind: "nodeAddresses"}, func(f *fixture) {
			f.two(func(n *corev1.Node) { n.Status.Addresses[0].Address = "192.0.2.1" })
		}, false},

		{"labels", format.CheckSpec{Kind: "nodeLabels"}, func(f *fixture) { f.two() }, true},
		{"no zone label", format.CheckSpec{Kind: "nodeLabels"}, func(f *fixture) { f.two(func(n *corev1.Node) { delete(n.Labels, flow.LabelZone) }) }, false},

		{"tainted", format.CheckSpec{Kind: "nodeTainted"}, func(f *fixture) { f.two(tainted) }, true},
		{"not tainted", format.CheckSpec{Kind: "nodeTainted"}, func(f *fixture) { f.two() }, false},
		{"no nodes at all", format.CheckSpec{Kind: "nodeTainted"}, func(*fixture) {}, false},

		{"ready", format.CheckSpec{Kind: "nodesReady"}, func(f *fixture) { f.two() }, true},
		{"not ready", format.CheckSpec{Kind: "nodesReady"}, func(f *fixture) { f.two(notReady) }, false},

		{"pending on taint", format.CheckSpec{Kind: "podsPending", Selector: "app=x", Reason: "untolerated taint"}, func(f *fixture) {
			f.pod("p", "", corev1.PodPending, false, "0/3 nodes are available: 3 node(s) had untolerated taint(s).")
		}, true},
		{"pending for another reason", format.CheckSpec{Kind: "podsPending", Selector: "app=x", Reason: "untolerated taint"}, func(f *fixture) {
			f.pod("p", "", corev1.PodPending, false, "0/3 nodes are available: 3 Insufficient cpu.")
		}, false},
		{"running, not pending", format.CheckSpec{Kind: "podsPending", Selector: "app=x"}, func(f *fixture) { f.pod("p", "n1", corev1.PodRunning, true, "") }, false},
		{"no pods", format.CheckSpec{Kind: "podsPending", Selector: "app=x"}, func(*fixture) {}, false},

		{"running", format.CheckSpec{Kind: "podsRunning", Selector: "app=x"}, func(f *fixture) { f.pod("p", "n1", corev1.PodRunning, true, "") }, true},
		{"pending, not running", format.CheckSpec{Kind: "podsRunning", Selector: "app=x"}, func(f *fixture) { f.pod("p", "", corev1.PodPending, false, "x") }, false},

		{"pending ip", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "pending"}, func(f *fixture) { f.svc("web") }, true},
		{"ip set but pending wanted", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "pending"}, func(f *fixture) { f.svc("web", withIngress("x.example")) }, false},
		{"ip set", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "set"}, func(f *fixture) {
			s := f.svc("web")
			lb := f.lb(s, cloud.TargetTypeInstance, 0)
			withIngress(lb.DNSName)(s)
		}, true},
		{"ip set without a load balancer", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "set"}, func(f *fixture) { f.svc("web", withIngress("made.up")) }, false},
		{"ip still pending", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "set"}, func(f *fixture) { f.svc("web") }, false},
		{"no service", format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "pending"}, func(*fixture) {}, false},

		{"class", format.CheckSpec{Kind: "serviceClass", Name: "web", Class: "service.k8s.aws/nlb"}, func(f *fixture) {
			f.svc("web", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("service.k8s.aws/nlb") })
		}, true},
		{"no class", format.CheckSpec{Kind: "serviceClass", Name: "web", Class: "service.k8s.aws/nlb"}, func(f *fixture) { f.svc("web") }, false},

		{"events", format.CheckSpec{Kind: "serviceEvents", Name: "web", Reasons: []string{"SyncLoadBalancerFailed"}, Message: "AccessDenied"}, func(f *fixture) {
			s := f.svc("web")
			f.event(s, s.UID, "SyncLoadBalancerFailed", "Error syncing load balancer: AccessDenied: CreateLoadBalancer")
		}, true},
		{"events of an older service with the same name", format.CheckSpec{Kind: "serviceEvents", Name: "web", Reasons: []string{"EnsuredLoadBalancer"}}, func(f *fixture) {
			s := f.svc("web")
			f.event(s, "uid-old", "EnsuredLoadBalancer", "Ensured load balancer")
		}, false},
		{"event without the message", format.CheckSpec{Kind: "serviceEvents", Name: "web", Reasons: []string{"SyncLoadBalancerFailed"}, Message: "AccessDenied"}, func(f *fixture) {
			s := f.svc("web")
			f.event(s, s.UID, "SyncLoadBalancerFailed", "Throttling")
		}, false},

		{"no events", format.CheckSpec{Kind: "noControllerEvents", Name: "web"}, func(f *fixture) {
			s := f.svc("web")
			f.event(s, "uid-old", "EnsuringLoadBalancer", "")
		}, true},
		{"an event", format.CheckSpec{Kind: "noControllerEvents", Name: "web"}, func(f *fixture) {
			s := f.svc("web")
			f.event(s, s.UID, "EnsuringLoadBalancer", "")
		}, false},

		{"flow stuck", format.CheckSpec{Kind: "serviceFlow", Name: "web", Reason: flow.ReasonNoServiceController}, func(f *fixture) {
			f.flows["default/web"] = flow.ServiceFlow{Step: 1, Stuck: &flow.Stuck{Reason: flow.ReasonNoServiceController}}
		}, true},
		{"flow not stuck", format.CheckSpec{Kind: "serviceFlow", Name: "web", Reason: flow.ReasonNoServiceController}, func(f *fixture) {
			f.flows["default/web"] = flow.ServiceFlow{Step: 5}
		}, false},
		{"flow at step 5", format.CheckSpec{Kind: "serviceFlow", Name: "web", Step: 5}, func(f *fixture) {
			f.flows["default/web"] = flow.ServiceFlow{Step: 5}
		}, true},

		{"controller off", format.CheckSpec{Kind: "controllerEnabled", Controller: "service", Enabled: off}, func(f *fixture) { f.ctrl["service"] = false }, true},
		{"controller on, off wanted", format.CheckSpec{Kind: "controllerEnabled", Controller: "service", Enabled: off}, func(*fixture) {}, false},
		{"controller absent", format.CheckSpec{Kind: "controllerEnabled", Controller: "lbc", Enabled: on}, func(*fixture) {}, false},

		{"denied", format.CheckSpec{Kind: "cloudDeny", Action: cloud.ActionCreateLoadBalancer, Denied: on}, func(f *fixture) {
			_ = f.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}})
		}, true},
		{"not denied", format.CheckSpec{Kind: "cloudDeny", Action: cloud.ActionCreateLoadBalancer, Denied: on}, func(*fixture) {}, false},
		{"still denied", format.CheckSpec{Kind: "cloudDeny", Action: cloud.ActionCreateLoadBalancer, Denied: off}, func(f *fixture) {
			_ = f.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}})
		}, false},

		{"ip targets", format.CheckSpec{Kind: "lbTargets", Name: "web", Mode: "ip"}, func(f *fixture) {
			s := f.svc("web")
			f.endpoints(s, "10.244.0.5@n1", "10.244.1.5@n2")
			f.lb(s, cloud.TargetTypeIP, 0, "10.244.0.5:80", "10.244.1.5:80")
		}, true},
		{"ip targets out of date", format.CheckSpec{Kind: "lbTargets", Name: "web", Mode: "ip"}, func(f *fixture) {
			s := f.svc("web")
			f.endpoints(s, "10.244.0.5@n1", "10.244.1.5@n2")
			f.lb(s, cloud.TargetTypeIP, 0, "10.244.0.5:80")
		}, false},
		{"instance targets", format.CheckSpec{Kind: "lbTargets", Name: "web", Mode: "instance"}, func(f *fixture) {
			a, b := f.two()
			f.lb(f.svc("web"), cloud.TargetTypeInstance, 0, a.ID+":30080", b.ID+":30080")
		}, true},
		{"instance targets but ip wanted", format.CheckSpec{Kind: "lbTargets", Name: "web", Mode: "ip"}, func(f *fixture) {
			a, _ := f.two()
			f.lb(f.svc("web"), cloud.TargetTypeInstance, 0, a.ID+":30080")
		}, false},
		{"instance targets on the wrong port", format.CheckSpec{Kind: "lbTargets", Name: "web", Mode: "instance"}, func(f *fixture) {
			a, _ := f.two()
			f.lb(f.svc("web"), cloud.TargetTypeInstance, 0, a.ID+":31999")
		}, false},

		{"health follows pods", format.CheckSpec{Kind: "healthChecksFollowPods", Name: "web"}, func(f *fixture) {
			a, b := f.two()
			s := f.svc("web", local)
			f.endpoints(s, "10.244.0.5@"+a.PrivateDNSName)
			f.lb(s, cloud.TargetTypeInstance, 32000, a.ID+":30080=healthy", b.ID+":30080=unhealthy")
		}, true},
		{"health not updated yet", format.CheckSpec{Kind: "healthChecksFollowPods", Name: "web"}, func(f *fixture) {
			a, b := f.two()
			s := f.svc("web", local)
			f.endpoints(s, "10.244.0.5@"+a.PrivateDNSName)
			f.lb(s, cloud.TargetTypeInstance, 32000, a.ID+":30080=healthy", b.ID+":30080=healthy")
		}, false},
		{"health check on the wrong port", format.CheckSpec{Kind: "healthChecksFollowPods", Name: "web"}, func(f *fixture) {
			a, b := f.two()
			s := f.svc("web", local)
			f.endpoints(s, "10.244.0.5@"+a.PrivateDNSName)
			f.lb(s, cloud.TargetTypeInstance, 30080, a.ID+":30080=healthy", b.ID+":30080=unhealthy")
		}, false},

		{"uneven", format.CheckSpec{Kind: "unevenLoad", Name: "web"}, func(f *fixture) {
			a, b := f.two()
			s := f.svc("web", local)
			f.endpoints(s, "10.244.0.5@"+a.PrivateDNSName, "10.244.0.6@"+a.PrivateDNSName, "10.244.1.5@"+b.PrivateDNSName)
			f.lb(s, cloud.TargetTypeInstance, 32000, a.ID+":30080=healthy", b.ID+":30080=healthy")
		}, true},
		{"even", format.CheckSpec{Kind: "unevenLoad", Name: "web"}, func(f *fixture) {
			a, b := f.two()
			s := f.svc("web", local)
			f.endpoints(s, "10.244.0.5@"+a.PrivateDNSName, "10.244.1.5@"+b.PrivateDNSName)
			f.lb(s, cloud.TargetTypeInstance, 32000, a.ID+":30080=healthy", b.ID+":30080=healthy")
		}, false},

		{"routes", format.CheckSpec{Kind: "routeForEveryNode"}, func(f *fixture) {
			a, b := f.two()
			f.route("10.244.0.0/24", a.ID)
			f.route("10.244.1.0/24", b.ID)
		}, true},
		{"a route missing", format.CheckSpec{Kind: "routeForEveryNode"}, func(f *fixture) {
			a, _ := f.two()
			f.route("10.244.0.0/24", a.ID)
		}, false},
		{"route to the wrong instance", format.CheckSpec{Kind: "routeForEveryNode"}, func(f *fixture) {
			a, b := f.two()
			f.route("10.244.0.0/24", a.ID)
			f.route("10.244.1.0/24", a.ID)
			_ = b
		}, false},

		{"no route yet", format.CheckSpec{Kind: "nodeWithoutRoute", Nodes: "new"}, func(f *fixture) { f.two() }, true},
		{"route already there", format.CheckSpec{Kind: "nodeWithoutRoute", Nodes: "new"}, func(f *fixture) {
			a, _ := f.two()
			f.route("10.244.0.0/24", a.ID)
		}, false},

		{"no stale routes", format.CheckSpec{Kind: "noStaleRoutes"}, func(f *fixture) {
			a, _ := f.two()
			f.route("10.244.0.0/24", a.ID)
		}, true},
		{"blackhole route", format.CheckSpec{Kind: "noStaleRoutes"}, func(f *fixture) {
			a, _ := f.two()
			f.route("10.244.0.0/24", a.ID)
			f.terminate(a)
		}, false},
		{"route without a node", format.CheckSpec{Kind: "noStaleRoutes"}, func(f *fixture) {
			a, _ := f.two()
			f.route("10.244.9.0/24", a.ID)
		}, false},

		{"terminated", format.CheckSpec{Kind: "instanceTerminated"}, func(f *fixture) {
			a, _ := f.two()
			f.terminate(a)
		}, true},
		{"nothing terminated", format.CheckSpec{Kind: "instanceTerminated"}, func(f *fixture) { f.two() }, false},
		{"terminated before the start", format.CheckSpec{Kind: "instanceTerminated"}, func(f *fixture) {
			a, _ := f.two()
			f.terminate(a)
			later(f)
		}, false},

		{"node left NotReady", format.CheckSpec{Kind: "nodeNotReady"}, func(f *fixture) {
			a := f.launch()
			f.node(a, 0, notReady)
			f.terminate(a)
		}, true},
		{"node still Ready", format.CheckSpec{Kind: "nodeNotReady"}, func(f *fixture) {
			a := f.launch()
			f.node(a, 0)
			f.terminate(a)
		}, false},
		{"node already deleted", format.CheckSpec{Kind: "nodeNotReady"}, func(f *fixture) { f.terminate(f.launch()) }, false},

		{"node deleted by the node-lifecycle controller", format.CheckSpec{Kind: "nodeDeleted", Nodes: "new"}, func(f *fixture) {
			a, _ := f.two()
			f.objs = f.objs[1:] // the Node of a
			f.terminate(a)
			f.deletingNodeEvent(a.PrivateDNSName, "cloud-node-lifecycle-controller")
		}, true},
		{"node deleted with kubectl", format.CheckSpec{Kind: "nodeDeleted", Nodes: "new"}, func(f *fixture) {
			a, _ := f.two()
			f.objs = f.objs[1:] // the Node of a
			f.terminate(a)
		}, false},
		{"node deleted, the event from someone else", format.CheckSpec{Kind: "nodeDeleted", Nodes: "new"}, func(f *fixture) {
			a, _ := f.two()
			f.objs = f.objs[1:] // the Node of a
			f.terminate(a)
			f.deletingNodeEvent(a.PrivateDNSName, "kubectl")
		}, false},
		{"node not deleted", format.CheckSpec{Kind: "nodeDeleted"}, func(f *fixture) {
			a, _ := f.two()
			f.terminate(a)
		}, false},
	}...)
}

func TestCheckKinds(t *testing.T) {
	passes, fails := map[string]bool{}, map[string]bool{}
	for _, tc := range checkCases() {
		t.Run(tc.spec.Kind+"/"+tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			o := f.eval(tc.spec)
			if o.Pass != tc.pass {
				t.Fatalf("pass = %v, want %v: %s", o.Pass, tc.pass, o.Detail.EN)
			}
			if !o.Detail.Complete() {
				t.Errorf("detail lacks a language: %+v", o.Detail)
			}
			if strings.Contains(o.Detail.EN+o.Detail.JA, "%!") {
				t.Errorf("detail has a formatting error: %+v", o.Detail)
			}
		})
		if tc.pass {
			passes[tc.spec.Kind] = true
		} else {
			fails[tc.spec.Kind] = true
		}
	}
	for _, k := range Kinds() {
		if !passes[k] {
			t.Errorf("check kind %s has no passing case", k)
		}
		if !fails[k] {
			t.Errorf("check kind %s has no failing case: a check that cannot fail is a bug", k)
		}
	}
}

func TestCheckSpecValidation(t *testing.T) {
	for _, tc := range []struct {
		spec format.CheckSpec
		want string
	}{
		{format.CheckSpec{Kind: "nope"}, "unknown check kind"},
		{format.CheckSpec{Kind: "serviceExternalIP", Name: "web"}, `"state" is required`},
		{format.CheckSpec{Kind: "serviceExternalIP", Name: "web", State: "maybe"}, `state "maybe"`},
		{format.CheckSpec{Kind: "nodesReady", Name: "web"}, `"name" does not apply`},
		{format.CheckSpec{Kind: "controllerEnabled", Controller: "dns", Enabled: ptr.To(true)}, `controller "dns"`},
		{format.CheckSpec{Kind: "cloudDeny", Action: "FlyToTheMoon", Denied: ptr.To(true)}, `action "FlyToTheMoon"`},
		{format.CheckSpec{Kind: "podsPending", Selector: "app in (("}, "selector"},
		{format.CheckSpec{Kind: "serviceFlow", Name: "web"}, "set step or reason"},
		{format.CheckSpec{Kind: "nodesReady", Nodes: "some"}, `nodes "some"`},
	} {
		err := Validate(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want it to mention %s", tc.spec, err, tc.want)
		}
	}
	if err := Validate(format.CheckSpec{Kind: "controllerEnabled", Controller: controllers.AddonLBC, Enabled: ptr.To(false)}); err != nil {
		t.Errorf("enabled: false must be a valid parameter: %v", err)
	}
}

// Every check spec of every embedded exercise is valid: format loads the
// files without knowing the kinds, so a misspelt kind or a parameter its
// kind ignores is caught here, in the fast tier, before a lab starts.
func TestEmbeddedSpecsValid(t *testing.T) {
	all, err := format.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateAll(all); err != nil {
		t.Fatal(err)
	}
	bad := []*format.Exercise{{ID: "x", Steps: []format.Step{{ID: "one", Checks: []format.CheckSpec{{Kind: "nodesGreen"}}}}}}
	if err := ValidateAll(bad); err == nil || !strings.Contains(err.Error(), "x, step one, checks[0]: unknown check kind") {
		t.Errorf("a misspelt kind: err = %v", err)
	}
}
