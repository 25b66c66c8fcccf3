package server

import (
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestCloudStateHasAWSLoadBalancers: the page's snapshot (the cloud's
// Snapshot, one list of load balancers) lists the AWS model's Classic
// ELBs (what the upstream provider makes) among the load balancers, with
// their kind, DNS name and targets, beside the lab's own.
func TestCloudStateHasAWSLoadBalancers(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := cloud.WithCaller(t.Context(), "test")
	inst, err := c.RunInstance(ctx, cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{Name: "lab-own", Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}); err != nil {
		t.Fatal(err)
	}
	net := c.AWSNetworkInfo()
	dns, err := c.CreateELB(ctx, cloud.CreateELBInput{Name: "a1", Subnets: []string{net.Subnets[0].ID},
		Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ELBRegisterInstances(ctx, "a1", []string{inst.ID}); err != nil {
		t.Fatal(err)
	}
	lbs := c.Snapshot().LoadBalancers
	if len(lbs) != 2 || lbs[0].Name != "a1" || lbs[1].Name != "lab-own" {
		t.Fatalf("load balancers %+v, want a1 and lab-own by name", lbs)
	}
	if a := lbs[0]; a.Kind != cloud.LBKindClassic || a.DNSName != dns || len(a.Targets) != 1 || a.Targets[0].ID != inst.ID {
		t.Errorf("the Classic ELB reads %+v", a)
	}
	if lbs[1].Kind != "" {
		t.Errorf("the lab's own load balancer has kind %q", lbs[1].Kind)
	}
}
