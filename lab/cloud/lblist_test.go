package cloud

import (
	"testing"
)

// TestOneLoadBalancerList: the lab's own load balancers and the AWS
// model's Classic ELBs and NLBs are one list (LoadBalancerViews and
// Snapshot, by name), read one way (LookupLoadBalancer) and given health
// by one setter (SetTargetsHealth), while the lab's DescribeLoadBalancers
// still answers for the lab's own only.
func TestOneLoadBalancerList(t *testing.T) {
	c := newTestCloud(t, nil)
	a := mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("service-controller")
	if _, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "b-own", Listeners: []Listener{{Port: 80, TargetPort: 30080}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTargets(ctx, "b-own", []Target{{ID: a.ID, Port: 30080}}); err != nil {
		t.Fatal(err)
	}
	net := c.AWSNetworkInfo()
	if _, err := c.CreateELB(ctx, CreateELBInput{Name: "a-clb", Subnets: []string{net.Subnets[0].ID},
		Listeners: []ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30081}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ELBRegisterInstances(ctx, "a-clb", []string{a.ID}); err != nil {
		t.Fatal(err)
	}
	nlb, err := c.CreateNLB(ctx, CreateNLBInput{Name: "c-nlb", Subnets: []string{net.Subnets[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := c.CreateTargetGroup(ctx, TargetGroup{Name: "k8s-default-web-0123456789", Protocol: "TCP", Port: 30082, TargetType: "instance"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTGTargets(ctx, tg.ARN, []TGTarget{{ID: a.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateListener(ctx, NLBListener{LBARN: nlb.ARN, Protocol: "TCP", Port: 80, TargetGroupARN: tg.ARN}); err != nil {
		t.Fatal(err)
	}

	want := []struct {
		name, kind string
		port       int32
	}{{"a-clb", LBKindClassic, 30081}, {"b-own", "", 30080}, {"c-nlb", LBKindNetwork, 30082}}
	views, snap := c.LoadBalancerViews(), c.Snapshot().LoadBalancers
	if len(views) != len(want) || len(snap) != len(want) {
		t.Fatalf("%d views and %d in the snapshot, want %d", len(views), len(snap), len(want))
	}
	for i, w := range want {
		t.Run(w.name, func(t *testing.T) {
			if v := views[i]; v.Name != w.name || v.Kind != w.kind {
				t.Errorf("view %d is %s (kind %q), want %s (kind %q)", i, v.Name, v.Kind, w.name, w.kind)
			}
			if s := snap[i]; s.Name != w.name || s.Kind != w.kind {
				t.Errorf("snapshot %d is %s (kind %q), want %s (kind %q)", i, s.Name, s.Kind, w.name, w.kind)
			}
			if err := c.SetTargetsHealth(w.name, []TargetHealthUpdate{{ID: a.ID, Port: w.port, Health: TargetHealthy}}); err != nil {
				t.Fatal(err)
			}
			lb, ok := c.LookupLoadBalancer(w.name)
			if !ok || lb.Kind != w.kind || len(lb.Targets) != 1 || lb.Targets[0].Health != TargetHealthy {
				t.Errorf("after SetTargetsHealth LookupLoadBalancer reads %+v (found %v), want its one target healthy", lb, ok)
			}
		})
	}
	if err := c.SetTargetsHealth("nope", nil); !IsCode(err, ErrLBNotFound) {
		t.Errorf("health of an unknown load balancer: %v, want %s", err, ErrLBNotFound)
	}
	own, err := c.DescribeLoadBalancers(ctx)
	if err != nil || len(own) != 1 || own[0].Name != "b-own" {
		t.Errorf("the lab's DescribeLoadBalancers: %+v, %v; want only b-own", own, err)
	}
}
