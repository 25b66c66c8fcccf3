package cloud

import (
	"net/netip"
	"slices"
	"testing"
)

// TestAWSLoadBalancerViews: a Classic ELB and an NLB built by the calls
// the AWS provider makes read as LoadBalancer views with what the data
// plane needs, and the health the data plane sets comes back in the views
// and in DescribeTargetHealth.
func TestAWSLoadBalancerViews(t *testing.T) {
	c := newTestCloud(t, nil)
	a, b := mustRun(t, c, RunInstanceInput{}), mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("service-controller")
	net := c.AWSNetworkInfo()
	sg, err := c.CreateSecurityGroup(WithService(ctx, ServiceEC2), "k8s-elb-a1", "for a1", net.VPCID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateELB(ctx, CreateELBInput{Name: "a1", Subnets: []string{net.Subnets[0].ID}, SecurityGroups: []string{sg},
		Listeners: []ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}},
		Tags:      map[string]string{"kubernetes.io/service-name": "default/web"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ELBRegisterInstances(ctx, "a1", []string{a.ID, b.ID}); err != nil {
		t.Fatal(err)
	}
	if err := c.ELBConfigureHealthCheck(ctx, "a1", ELBHealthCheck{Target: "HTTP:32000/healthz", Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateELBPolicy(ctx, "a1", ELBPolicy{Name: "k8s-proxyprotocol-enabled", Type: ProxyProtocolPolicyType, Attributes: map[string]string{"ProxyProtocol": "true"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetELBBackendPolicies(ctx, "a1", 30080, []string{"k8s-proxyprotocol-enabled"}); err != nil {
		t.Fatal(err)
	}

	nlb, err := c.CreateNLB(ctx, CreateNLBInput{Name: "n1", Subnets: []string{net.Subnets[0].ID, net.Subnets[1].ID}})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := c.CreateTargetGroup(ctx, TargetGroup{Name: "k8s-default-web-0123456789", Protocol: "TCP", Port: 30081, TargetType: "instance"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTGTargets(ctx, tg.ARN, []TGTarget{{ID: a.ID}, {ID: b.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateListener(ctx, NLBListener{LBARN: nlb.ARN, Protocol: "TCP", Port: 80, TargetGroupARN: tg.ARN}); err != nil {
		t.Fatal(err)
	}

	sorted := []string{a.ID, b.ID} // views sort targets by ID
	slices.Sort(sorted)
	views := c.LoadBalancerViews()
	if len(views) != 2 || views[0].Name != "a1" || views[1].Name != "n1" {
		t.Fatalf("views %+v, want a1 and n1", views)
	}
	tests := []struct {
		name      string
		v         *LoadBalancer
		kind      string
		listener  Listener
		hc        HealthCheck
		groups    []string
		preserve  bool
		proxy     []int32
		subnets   int
		targetIDs []string
	}{
		{"Classic ELB", views[0], LBKindClassic, Listener{Protocol: "TCP", Port: 80, TargetPort: 30080},
			HealthCheck{Protocol: "HTTP", Port: 32000, Path: "/healthz", IntervalSeconds: 10, TimeoutSeconds: 5, HealthyThreshold: 2, UnhealthyThreshold: 6},
			[]string{sg}, false, []int32{30080}, 1, sorted},
		{"NLB", views[1], LBKindNetwork, Listener{Protocol: "TCP", Port: 80, TargetPort: 30081},
			HealthCheck{Protocol: "TCP", Port: 30081, IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3},
			nil, true, nil, 2, sorted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			if v.Kind != tc.kind || v.TargetType != TargetTypeInstance || v.DNSName == "" {
				t.Errorf("kind %q type %q DNS %q", v.Kind, v.TargetType, v.DNSName)
			}
			if len(v.Listeners) != 1 || v.Listeners[0] != tc.listener {
				t.Errorf("listeners %+v, want %+v", v.Listeners, tc.listener)
			}
			if v.HealthCheck == nil || *v.HealthCheck != tc.hc {
				t.Errorf("health check %+v, want %+v", v.HealthCheck, tc.hc)
			}
			if !slices.Equal(v.SecurityGroups, tc.groups) || v.PreserveClientIP != tc.preserve || !slices.Equal(v.ProxyProtocolPorts, tc.proxy) {
				t.Errorf("groups %v preserve %v proxy %v; want %v %v %v", v.SecurityGroups, v.PreserveClientIP, v.ProxyProtocolPorts, tc.groups, tc.preserve, tc.proxy)
			}
			if len(v.Addresses) != tc.subnets {
				t.Fatalf("addresses %+v, want one per subnet (%d)", v.Addresses, tc.subnets)
			}
			for _, addr := range v.Addresses {
				i := slices.IndexFunc(net.Subnets, func(s AWSSubnet) bool { return s.ID == addr.Subnet })
				ip, err := netip.ParseAddr(addr.IP)
				if i < 0 || err != nil || !netip.MustParsePrefix(net.Subnets[i].CIDR).Contains(ip) || net.Subnets[i].Zone != addr.Zone {
					t.Errorf("address %+v is not in its subnet", addr)
				}
			}
			var ids []string
			for _, tg := range v.Targets {
				ids = append(ids, tg.ID)
				if tg.Health != TargetInitial {
					t.Errorf("target %s is %s before any check, want initial", tg.ID, tg.Health)
				}
			}
			if !slices.Equal(ids, tc.targetIDs) {
				t.Errorf("targets %v, want %v", ids, tc.targetIDs)
			}
		})
	}

	events, stop := c.Subscribe(16)
	defer stop()
	if err := c.SetTargetsHealth("n1", []TargetHealthUpdate{{ID: a.ID, Port: 30081, Health: TargetHealthy}, {ID: b.ID, Port: 30081, Health: TargetUnhealthy, Reason: "no local endpoints"}}); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Kind != EventELB || ev.ID != "n1" {
		t.Fatalf("event %+v, want elb n1", ev)
	}
	v, _ := c.LookupLoadBalancer("n1")
	got := map[string]Target{}
	for _, tg := range v.Targets {
		got[tg.ID] = tg
	}
	if got[a.ID].Health != TargetHealthy || got[b.ID].Health != TargetUnhealthy || got[b.ID].Reason != "no local endpoints" {
		t.Fatalf("targets after the check %+v", v.Targets)
	}
	th, err := c.DescribeTargetHealth(ctx, tg.ARN)
	if err != nil || len(th) != 2 {
		t.Fatalf("DescribeTargetHealth %+v, %v", th, err)
	}
	for _, h := range th {
		if h.ID == b.ID && (h.State != string(TargetUnhealthy) || h.Reason != "Target.FailedHealthChecks") || h.ID == a.ID && h.State != string(TargetHealthy) {
			t.Errorf("DescribeTargetHealth %+v", h)
		}
	}
	for _, tc := range []struct{ id, want string }{{"a1", "a1"}, {nlb.ARN, "n1"}, {tg.ARN, "n1"}} {
		if got := c.AWSLoadBalancerName(tc.id); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("AWSLoadBalancerName(%s) = %v, want %s", tc.id, got, tc.want)
		}
	}
	if err := c.DeleteNLB(ctx, nlb.ARN); err != nil {
		t.Fatal(err)
	}
	if got := c.AWSLoadBalancerName(nlb.ARN); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("AWSLoadBalancerName of a deleted NLB = %v, want n1", got)
	}
	if err := c.SetTargetsHealth("nope", nil); !IsCode(err, ErrLBNotFound) {
		t.Fatalf("unknown load balancer: %v", err)
	}
	if err := c.SetELBBackendPolicies(ctx, "a1", 30080, []string{"nope"}); !IsCode(err, "PolicyNotFound") {
		t.Fatalf("unknown policy: %v", err)
	}
}

// TestAWSViewsShared: a Classic ELB's view is shared until something it
// shows changes (a call on it, the health the data plane sets, the state
// of an instance it targets), and the view after the change shows it.
func TestAWSViewsShared(t *testing.T) {
	c := newTestCloud(t, nil)
	a, b := mustRun(t, c, RunInstanceInput{}), mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("service-controller")
	net := c.AWSNetworkInfo()
	if _, err := c.CreateELB(ctx, CreateELBInput{Name: "a1", Subnets: []string{net.Subnets[0].ID},
		Listeners: []ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ELBRegisterInstances(ctx, "a1", []string{a.ID, b.ID}); err != nil {
		t.Fatal(err)
	}
	view := func() *LoadBalancer {
		t.Helper()
		vs := c.LoadBalancerViews()
		if len(vs) != 1 {
			t.Fatalf("%d views, want 1", len(vs))
		}
		return vs[0]
	}
	health := func(v *LoadBalancer, id string) TargetHealth {
		for _, tg := range v.Targets {
			if tg.ID == id {
				return tg.Health
			}
		}
		return ""
	}
	steps := []struct {
		name    string
		change  func() error
		changed bool
		check   func(v *LoadBalancer) bool
	}{
		{"nothing", func() error { return nil }, false, func(v *LoadBalancer) bool { return health(v, a.ID) == TargetInitial }},
		{"health set", func() error {
			return c.SetTargetsHealth("a1", []TargetHealthUpdate{{ID: a.ID, Port: 30080, Health: TargetHealthy}})
		}, true, func(v *LoadBalancer) bool { return health(v, a.ID) == TargetHealthy }},
		{"same health again", func() error {
			return c.SetTargetsHealth("a1", []TargetHealthUpdate{{ID: a.ID, Port: 30080, Health: TargetHealthy}})
		}, false, func(v *LoadBalancer) bool { return health(v, a.ID) == TargetHealthy }},
		{"instance stopped", func() error { _, err := c.StopInstance(ctxAs("student"), b.ID); return err },
			true, func(v *LoadBalancer) bool { return health(v, b.ID) == TargetUnused }},
		{"instance deregistered", func() error { _, err := c.ELBDeregisterInstances(ctx, "a1", []string{b.ID}); return err },
			true, func(v *LoadBalancer) bool { return health(v, b.ID) == "" && len(v.Targets) == 1 }},
		{"a call that changes nothing", func() error { _, err := c.ELBTags(ctx, []string{"a1"}); return err },
			false, func(v *LoadBalancer) bool { return len(v.Targets) == 1 }},
	}
	prev := view()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.change(); err != nil {
				t.Fatal(err)
			}
			v := view()
			if (v != prev) != st.changed {
				t.Errorf("view replaced: %v, want %v", v != prev, st.changed)
			}
			if !st.check(v) {
				t.Errorf("view does not show the change: %+v", v.Targets)
			}
			prev = v
		})
	}
	if err := c.DeleteELB(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if vs := c.LoadBalancerViews(); len(vs) != 0 {
		t.Errorf("views after the delete: %d, want 0", len(vs))
	}
}
