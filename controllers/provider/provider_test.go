package provider

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// These tests drive the Provider directly against a simulated cloud; the
// control plane is not involved.

func newProvider(t *testing.T, profileName string) (*Provider, *cloud.Cloud) {
	t.Helper()
	prof, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cloud.Config{}
	if prof.IngressIP {
		cfg.IngressMode = cloud.IngressIP
	}
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return New(c, prof, ""), c
}

func run(t *testing.T, c *cloud.Cloud) cloud.Instance {
	t.Helper()
	inst, err := c.RunInstance(context.Background(), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func nodeNamed(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestProviderInterfaces(t *testing.T) {
	for _, tc := range []struct {
		profile      string
		lb, routes   bool
		providerName string
	}{
		{"aws", true, true, "aws"},
		{"kubevirt", false, false, "kubevirt"},
		{"vpc-cni", true, true, "aws"},
		{"ip", true, true, "aws"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			p, _ := newProvider(t, tc.profile)
			if _, ok := p.LoadBalancer(); ok != tc.lb {
				t.Errorf("LoadBalancer() ok = %t, want %t", ok, tc.lb)
			}
			if _, ok := p.Routes(); ok != tc.routes {
				t.Errorf("Routes() ok = %t, want %t", ok, tc.routes)
			}
			if _, ok := p.Instances(); ok {
				t.Error("Instances() should report false (InstancesV2 only)")
			}
			if _, ok := p.InstancesV2(); !ok {
				t.Error("InstancesV2() should report true")
			}
			if _, ok := p.Clusters(); ok {
				t.Error("Clusters() should report false")
			}
			if p.ProviderName() != tc.providerName || !p.HasClusterID() {
				t.Errorf("ProviderName %q HasClusterID %t", p.ProviderName(), p.HasClusterID())
			}
		})
	}
}

func TestProviderInstanceMetadata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		profile string
		node    func(inst cloud.Instance) *v1.Node
		wantPID func(inst cloud.Instance) string
	}{
		{"aws by name", "aws", func(i cloud.Instance) *v1.Node { return nodeNamed(i.PrivateDNSName, "") },
			func(i cloud.Instance) string { return "aws:///" + i.Zone + "/" + i.ID }},
		{"aws by providerID", "aws", func(i cloud.Instance) *v1.Node { return nodeNamed("other-name", "aws:///"+i.Zone+"/"+i.ID) },
			func(i cloud.Instance) string { return "aws:///" + i.Zone + "/" + i.ID }},
		{"aws short providerID", "aws", func(i cloud.Instance) *v1.Node { return nodeNamed("other-name", "aws://"+i.ID) },
			func(i cloud.Instance) string { return "aws:///" + i.Zone + "/" + i.ID }},
		{"kubevirt by name", "kubevirt", func(i cloud.Instance) *v1.Node { return nodeNamed(i.PrivateDNSName, "") },
			func(i cloud.Instance) string { return "kubevirt://" + i.PrivateDNSName }},
		{"kubevirt by providerID", "kubevirt", func(i cloud.Instance) *v1.Node { return nodeNamed(i.PrivateDNSName, "kubevirt://"+i.PrivateDNSName) },
			func(i cloud.Instance) string { return "kubevirt://" + i.PrivateDNSName }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newProvider(t, tc.profile)
			inst := run(t, c)
			md, err := p.For("node-controller").InstanceMetadata(ctx, tc.node(inst))
			if err != nil {
				t.Fatal(err)
			}
			if md.ProviderID != tc.wantPID(inst) {
				t.Errorf("ProviderID = %q, want %q", md.ProviderID, tc.wantPID(inst))
			}
			if md.InstanceType != "m5.large" || md.Zone != inst.Zone || md.Region != "ap-northeast-1" {
				t.Errorf("type/zone/region = %s/%s/%s", md.InstanceType, md.Zone, md.Region)
			}
			want := []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: inst.PrivateIP},
				{Type: v1.NodeHostName, Address: inst.PrivateDNSName},
				{Type: v1.NodeInternalDNS, Address: inst.PrivateDNSName},
			}
			if !slices.Equal(md.NodeAddresses, want) {
				t.Errorf("addresses = %v, want %v", md.NodeAddresses, want)
			}
			calls := c.Calls(0)
			if last := calls[len(calls)-1]; last.Caller != "node-controller" || last.Action != cloud.ActionDescribeInstances {
				t.Errorf("last call = %s by %s, want DescribeInstances by node-controller", last.Action, last.Caller)
			}
		})
	}
}

func TestProviderInstanceStates(t *testing.T) {
	ctx := context.Background()
	p, c := newProvider(t, "aws")
	for _, tc := range []struct {
		name           string
		transition     func(id string) error
		exists, shutdn bool
	}{
		{"running", func(string) error { return nil }, true, false},
		{"stopped", func(id string) error { _, err := c.StopInstance(ctx, id); return err }, true, true},
		{"terminated", func(id string) error { _, err := c.TerminateInstance(ctx, id); return err }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := run(t, c)
			if err := tc.transition(inst.ID); err != nil {
				t.Fatal(err)
			}
			for _, node := range []*v1.Node{nodeNamed(inst.PrivateDNSName, ""), nodeNamed("x", p.ProviderID(inst))} {
				exists, err := p.InstanceExists(ctx, node)
				if err != nil || exists != tc.exists {
					t.Errorf("%s/%s: InstanceExists = %t, %v; want %t", node.Name, node.Spec.ProviderID, exists, err, tc.exists)
				}
				if !tc.exists {
					continue
				}
				shut, err := p.InstanceShutdown(ctx, node)
				if err != nil || shut != tc.shutdn {
					t.Errorf("%s: InstanceShutdown = %t, %v; want %t", node.Name, shut, err, tc.shutdn)
				}
			}
			if _, err := p.InstanceMetadata(ctx, nodeNamed(inst.PrivateDNSName, "")); tc.exists != (err == nil) {
				t.Errorf("InstanceMetadata err = %v", err)
			} else if err != nil && !errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceMetadata err = %v, want InstanceNotFound", err)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		for _, node := range []*v1.Node{nodeNamed("ip-1-2-3-4.nowhere", ""), nodeNamed("x", "aws:///ap-northeast-1a/i-00000000000000000")} {
			if ok, err := p.InstanceExists(ctx, node); ok || err != nil {
				t.Errorf("%s: InstanceExists = %t, %v", node.Name, ok, err)
			}
		}
		if _, err := p.InstanceExists(ctx, nodeNamed("x", "gce://p/z/n")); err == nil {
			t.Error("foreign providerID: want an error")
		}
	})
}

func lbSvc(uid string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

func TestProviderLoadBalancer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		profile   string
		svc       *v1.Service
		wantHC    cloud.HealthCheck
		wantIP    bool
		listeners []cloud.Listener
	}{
		{
			name: "cluster policy", profile: "aws",
			svc:       lbSvc("11111111-2222-3333-4444-555555555555", v1.ServicePort{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}),
			wantHC:    cloud.HealthCheck{Protocol: "TCP", Port: 30080},
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}},
		},
		{
			name: "local policy, two ports", profile: "aws",
			svc: func() *v1.Service {
				s := lbSvc("21111111-2222-3333-4444-555555555555",
					v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
					v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32000
				return s
			}(),
			wantHC:    cloud.HealthCheck{Protocol: "HTTP", Port: 32000, Path: "/healthz"},
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}, {Protocol: "UDP", Port: 53, TargetPort: 30053}},
		},
		{
			name: "ip profile", profile: "ip", wantIP: true,
			svc:       lbSvc("31111111-2222-3333-4444-555555555555", v1.ServicePort{Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}),
			wantHC:    cloud.HealthCheck{Protocol: "TCP", Port: 30443},
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 443, TargetPort: 30443}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov, c := newProvider(t, tc.profile)
			p := prov.For("service-controller")
			a, b, gone := run(t, c), run(t, c), run(t, c)
			uninit := run(t, c)
			nodes := []*v1.Node{nodeNamed(a.PrivateDNSName, p.ProviderID(a)), nodeNamed("renamed", p.ProviderID(b)), nodeNamed(gone.PrivateDNSName, p.ProviderID(gone)),
				nodeNamed(uninit.PrivateDNSName, "")} // not initialized: no target, as on AWS
			if _, err := c.TerminateInstance(ctx, gone.ID); err != nil {
				t.Fatal(err)
			}
			name := p.GetLoadBalancerName(ctx, "ccmlab", tc.svc)
			if want := "a" + strings.ReplaceAll(string(tc.svc.UID), "-", "")[:31]; name != want {
				t.Errorf("name = %s, want %s", name, want)
			}
			if _, exists, err := p.GetLoadBalancer(ctx, "ccmlab", tc.svc); exists || err != nil {
				t.Fatalf("GetLoadBalancer before = %t, %v", exists, err)
			}
			st, err := p.EnsureLoadBalancer(ctx, "ccmlab", tc.svc, nodes)
			if err != nil {
				t.Fatal(err)
			}
			lb := c.Snapshot().LoadBalancers[0]
			if tc.wantIP {
				if st.Ingress[0].IP != lb.IP || lb.IP == "" || st.Ingress[0].IPMode == nil {
					t.Errorf("status %+v, lb ip %s", st, lb.IP)
				}
			} else if st.Ingress[0].Hostname != lb.DNSName || lb.DNSName == "" {
				t.Errorf("status %+v, lb dns %s", st, lb.DNSName)
			}
			if lb.TargetType != cloud.TargetTypeInstance || lb.Tags[TagServiceName] != "default/web" || lb.Tags["kubernetes.io/cluster/ccmlab"] != "owned" {
				t.Errorf("lb = %+v", lb)
			}
			if !slices.Equal(lb.Listeners, tc.listeners) {
				t.Errorf("listeners = %v, want %v", lb.Listeners, tc.listeners)
			}
			if hc := lb.HealthCheck; hc == nil || hc.Protocol != tc.wantHC.Protocol || hc.Port != tc.wantHC.Port || hc.Path != tc.wantHC.Path {
				t.Errorf("health check = %+v, want %+v", hc, tc.wantHC)
			}
			var want []string
			for _, id := range []string{a.ID, b.ID} {
				for _, l := range tc.listeners {
					want = append(want, id+":"+itoa(l.TargetPort))
				}
			}
			slices.Sort(want)
			if got := targetIDs(lb); !slices.Equal(got, want) {
				t.Errorf("targets = %v, want %v", got, want)
			}

			// Node b leaves: UpdateLoadBalancer deregisters it.
			if err := p.UpdateLoadBalancer(ctx, "ccmlab", tc.svc, nodes[:1]); err != nil {
				t.Fatal(err)
			}
			lb, _ = findLB(c, name)
			for _, tg := range lb.Targets {
				if tg.ID != a.ID {
					t.Errorf("stale target %s left", tg.ID)
				}
			}
			// A second Ensure with nothing to change makes no mutating call.
			before := len(c.Calls(0))
			if _, err := p.EnsureLoadBalancer(ctx, "ccmlab", tc.svc, nodes[:1]); err != nil {
				t.Fatal(err)
			}
			for _, call := range c.Calls(0)[before:] {
				if call.Action != cloud.ActionDescribeLoadBalancers && call.Action != cloud.ActionDescribeInstances {
					t.Errorf("idempotent Ensure made a %s call", call.Action)
				}
			}
			if err := p.EnsureLoadBalancerDeleted(ctx, "ccmlab", tc.svc); err != nil {
				t.Fatal(err)
			}
			if err := p.EnsureLoadBalancerDeleted(ctx, "ccmlab", tc.svc); err != nil {
				t.Fatalf("deleting twice: %v", err)
			}
			if n := len(c.Snapshot().LoadBalancers); n != 0 {
				t.Errorf("%d load balancers left", n)
			}
		})
	}
}

func TestProviderLoadBalancerErrors(t *testing.T) {
	ctx := context.Background()
	prov, c := newProvider(t, "aws")
	p := prov.For("service-controller")
	svc := lbSvc("41111111-2222-3333-4444-555555555555", v1.ServicePort{Port: 80, NodePort: 30080})
	for _, tc := range []struct {
		faults cloud.Faults
		code   string
		text   string
	}{
		{cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}, cloud.ErrAccessDenied,
			"AccessDenied: User: arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/service-controller is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"},
		{cloud.Faults{QPS: 0.001, Burst: 1}, cloud.ErrThrottling, "Throttling: Rate exceeded"},
		{cloud.Faults{FailNext: map[string]int{cloud.ActionCreateLoadBalancer: 1}}, cloud.ErrInjected, "InternalFailure"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			if err := c.SetFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.SetFaults(cloud.Faults{}) }()
			if tc.code == cloud.ErrThrottling {
				_, _ = c.DescribeRouteTable(ctx) // spend the one token
			}
			_, err := p.EnsureLoadBalancer(ctx, "ccmlab", svc, nil)
			if !cloud.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want code %s containing %q", err, tc.code, tc.text)
			}
		})
	}
	t.Run("no NodePort", func(t *testing.T) {
		_, err := p.EnsureLoadBalancer(ctx, "ccmlab", lbSvc("5", v1.ServicePort{Port: 80}), nil)
		if err == nil || !strings.Contains(err.Error(), "NodePort") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestProviderRoutes(t *testing.T) {
	ctx := context.Background()
	prov, c := newProvider(t, "aws")
	p := prov.For("route-controller")
	a, b := run(t, c), run(t, c)
	for i, inst := range []cloud.Instance{a, b} {
		r := &cloudprovider.Route{TargetNode: types.NodeName(inst.PrivateDNSName), DestinationCIDR: "10.244." + itoa(int32(i)) + ".0/24"}
		if err := p.CreateRoute(ctx, "ccmlab", "hint", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CreateRoute(ctx, "ccmlab", "hint", &cloudprovider.Route{TargetNode: "nope", DestinationCIDR: "10.244.9.0/24"}); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("route to unknown node: err = %v", err)
	}
	if _, err := c.TerminateInstance(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	routes, err := p.ListRoutes(ctx, "ccmlab")
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 {
		t.Fatalf("routes = %d", len(routes))
	}
	if r := routes[0]; r.DestinationCIDR != "10.244.0.0/24" || string(r.TargetNode) != a.PrivateDNSName || r.Blackhole {
		t.Errorf("route 0 = %+v", r)
	}
	if r := routes[1]; r.DestinationCIDR != "10.244.1.0/24" || r.TargetNode != "" || !r.Blackhole {
		t.Errorf("route 1 (terminated instance) = %+v, want a blackhole", r)
	}
	for _, r := range routes {
		if err := p.DeleteRoute(ctx, "ccmlab", r); err != nil {
			t.Fatal(err)
		}
		if err := p.DeleteRoute(ctx, "ccmlab", r); err != nil {
			t.Fatalf("deleting twice: %v", err)
		}
	}
	for _, call := range c.Calls(0) {
		if call.Caller != "route-controller" && call.Caller != "unknown" {
			t.Errorf("call %s by %q", call.Action, call.Caller)
		}
	}
}

func TestProviderSwitchedOff(t *testing.T) {
	prov, c := newProvider(t, "aws")
	inst := run(t, c)
	life, cancel := context.WithCancel(context.Background())
	g := &testGate{}
	p := prov.For("node-controller").Bind(life, g)
	if _, err := p.InstanceExists(context.Background(), nodeNamed(inst.PrivateDNSName, "")); err != nil {
		t.Fatal(err)
	}
	cancel()
	g.close()
	if g.inFlight != 0 {
		t.Fatalf("%d calls still in flight after the call returned", g.inFlight)
	}
	before := len(c.Calls(0))
	if _, err := p.InstanceExists(context.Background(), nodeNamed(inst.PrivateDNSName, "")); !errors.Is(err, ErrSwitchedOff) {
		t.Errorf("err = %v, want ErrSwitchedOff", err)
	}
	if n := len(c.Calls(0)) - before; n != 0 {
		t.Errorf("%d cloud calls after switch-off", n)
	}
}

// testGate is the manager's gate in miniature: it counts calls in flight
// and refuses new ones once closed.
type testGate struct {
	mu       sync.Mutex
	closed   bool
	inFlight int
}

func (g *testGate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inFlight++
	return true
}

func (g *testGate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
}

func (g *testGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

func findLB(c *cloud.Cloud, name string) (cloud.LoadBalancer, bool) {
	for _, lb := range c.Snapshot().LoadBalancers {
		if lb.Name == name {
			return lb, true
		}
	}
	return cloud.LoadBalancer{}, false
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// targetIDs is "instance:port" per target, sorted, as the assertions compare them.
func targetIDs(lb cloud.LoadBalancer) []string {
	var out []string
	for _, t := range lb.Targets {
		out = append(out, t.ID+":"+strconv.Itoa(int(t.Port)))
	}
	slices.Sort(out)
	return out
}

func TestProviderImplementedElsewhere(t *testing.T) {
	ctx := context.Background()
	prov, c := newProvider(t, "aws")
	p := prov.For("service-controller")
	svc := lbSvc("41111111-2222-3333-4444-555555555555", v1.ServicePort{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP})
	svc.Annotations = map[string]string{annotationLBType: "external"}
	if _, err := p.EnsureLoadBalancer(ctx, "ccmlab", svc, nil); err != cloudprovider.ImplementedElsewhere {
		t.Errorf("EnsureLoadBalancer: %v, want ImplementedElsewhere", err)
	}
	if err := p.UpdateLoadBalancer(ctx, "ccmlab", svc, nil); err != cloudprovider.ImplementedElsewhere {
		t.Errorf("UpdateLoadBalancer: %v, want ImplementedElsewhere", err)
	}
	if _, exists, err := p.GetLoadBalancer(ctx, "ccmlab", svc); exists || err != nil {
		t.Errorf("GetLoadBalancer = %v, %v", exists, err)
	}
	if err := p.EnsureLoadBalancerDeleted(ctx, "ccmlab", svc); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted: %v", err)
	}
	if n := len(c.Calls(0)); n != 0 {
		t.Errorf("%d cloud calls for a Service the load balancer controller owns", n)
	}
}

// The call log names the interface method behind every call, so a
// student can read which method of cloudprovider.Interface made it.
func TestProviderMethodsInCallLog(t *testing.T) {
	ctx := context.Background()
	prov, c := newProvider(t, "aws")
	p := prov.For("service-controller")
	a := run(t, c)
	before := len(c.Calls(0))
	svc := lbSvc("51111111-2222-3333-4444-555555555555", v1.ServicePort{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP})
	if _, err := p.EnsureLoadBalancer(ctx, "ccmlab", svc, []*v1.Node{nodeNamed(a.PrivateDNSName, p.ProviderID(a))}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.InstanceMetadata(ctx, nodeNamed(a.PrivateDNSName, "")); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, call := range c.Calls(0)[before:] {
		got[call.Action] = call.Method
	}
	want := map[string]string{
		cloud.ActionDescribeLoadBalancers: "LoadBalancer.EnsureLoadBalancer",
		cloud.ActionCreateLoadBalancer:    "LoadBalancer.EnsureLoadBalancer",
		cloud.ActionRegisterTargets:       "LoadBalancer.EnsureLoadBalancer",
		cloud.ActionDescribeInstances:     "InstancesV2.InstanceMetadata", // the last one
	}
	for action, m := range want {
		if got[action] != m {
			t.Errorf("%s: method %q, want %q", action, got[action], m)
		}
	}
}
