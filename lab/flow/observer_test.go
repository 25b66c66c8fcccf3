package flow

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Only the Node controller's DescribeInstances calls belong to a node's
// flow. The Service controller asks about every node on every load
// balancer sync; filing its calls would redo every node's flow once per
// Service (a million times at 1,000 nodes x 1,000 Services).
func TestOnlyNodeControllerQueriesRedoNodeFlows(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.RunInstance(cloud.WithCaller(context.Background(), "test"), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Client: fake.NewClientset(), Cloud: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		caller string
		redo   bool
	}{
		{"service-controller", false},
		{"route-controller", false},
		{"node-controller", true},
	} {
		t.Run(tc.caller, func(t *testing.T) {
			call := cloud.Call{Seq: 1, Action: cloud.ActionDescribeInstances, Caller: tc.caller, State: cloud.CallDone, Resources: []string{inst.ID}}
			o.mu.Lock()
			keys := o.recordCallLocked(call)
			o.mu.Unlock()
			if got := len(keys) > 0; got != tc.redo {
				t.Errorf("a DescribeInstances by %s redoes node flows: %v, want %v (keys %v)", tc.caller, got, tc.redo, keys)
			}
		})
	}
}

// The upstream AWS provider's calls name a Classic ELB, an NLB's ARN, a
// target group, a listener's ARN or a k8s-elb- security group; each is
// filed under its load balancer, so the flow sees them all, refusals of
// things that were never made included.
func TestAWSCallsFiledUnderTheirLoadBalancer(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := cloud.WithCaller(context.Background(), "service-controller")
	inst, err := c.RunInstance(ctx, cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Client: fake.NewClientset(), Cloud: c, Controllers: func() map[string]bool { return map[string]bool{"service": true} }})
	if err != nil {
		t.Fatal(err)
	}
	// What onService learns of two LoadBalancer Services.
	for key, lb := range map[string]string{"default/plain": "aplain", "default/web-nlb": "anlb"} {
		ns, name, _ := strings.Cut(key, "/")
		o.services[key] = ServiceView{Namespace: ns, Name: name, Type: "LoadBalancer"}
		o.lbOwner.set(lb, key)
	}
	net := c.AWSNetworkInfo()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The Classic ELB, as ensureLoadBalancer makes it.
	gid, err := c.CreateSecurityGroup(ctx, cloud.ELBSecurityGroupPrefix+"aplain", "Security group for Kubernetes ELB aplain", "", nil)
	must(err)
	must(c.AuthorizeIngress(ctx, gid, []cloud.IPPermission{{Protocol: "tcp", FromPort: 80, ToPort: 80, CIDRs: []string{"0.0.0.0/0"}}}))
	_, err = c.CreateELB(ctx, cloud.CreateELBInput{Name: "aplain", Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstancePort: 31234}},
		Subnets: []string{net.Subnets[0].ID}, SecurityGroups: []string{gid}, Tags: map[string]string{cloud.ServiceTag: "default/plain"}})
	must(err)
	must(c.ELBConfigureHealthCheck(ctx, "aplain", cloud.ELBHealthCheck{Target: "TCP:31234", Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6}))
	_, err = c.ELBRegisterInstances(ctx, "aplain", []string{inst.ID})
	must(err)
	// The NLB, as ensureLoadBalancerv2 makes it, its first target group
	// refused.
	tags := map[string]string{cloud.ServiceTag: "default/web-nlb"}
	nlb, err := c.CreateNLB(ctx, cloud.CreateNLBInput{Name: "anlb", Type: "network", Subnets: []string{net.Subnets[0].ID}, Tags: tags})
	must(err)
	tgIn := cloud.TargetGroup{Name: "k8s-default-webnlb-0123456789", Protocol: "TCP", Port: 31235, VPCID: net.VPCID, TargetType: "instance", Tags: tags}
	must(c.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateTargetGroup}}))
	if _, err := c.CreateTargetGroup(ctx, tgIn); !cloud.IsCode(err, cloud.ErrAccessDenied) {
		t.Fatalf("CreateTargetGroup under deny: %v, want AccessDenied", err)
	}
	must(c.SetFaults(cloud.Faults{}))
	tg, err := c.CreateTargetGroup(ctx, tgIn)
	must(err)
	must(c.RegisterTGTargets(ctx, tg.ARN, []cloud.TGTarget{{ID: inst.ID, Port: 31235}}))
	_, err = c.CreateListener(ctx, cloud.NLBListener{LBARN: nlb.ARN, Protocol: "TCP", Port: 80, TargetGroupARN: tg.ARN})
	must(err)

	o.mu.Lock()
	defer o.mu.Unlock()
	for _, call := range c.Calls(0) {
		for _, k := range o.recordCallLocked(call) {
			o.recomputeKeyLocked(k)
		}
	}
	for _, tc := range []struct {
		lb, svc string
		want    []string
		step    int
	}{
		{"aplain", "default/plain", []string{"CreateSecurityGroup", "AuthorizeSecurityGroupIngress", "CreateLoadBalancer", "ConfigureHealthCheck", "RegisterInstancesWithLoadBalancer"}, 4},
		{"anlb", "default/web-nlb", []string{"CreateLoadBalancer", "CreateTargetGroup AccessDenied", "CreateTargetGroup", "RegisterTargets", "CreateListener"}, 4},
	} {
		t.Run(tc.lb, func(t *testing.T) {
			var got []string
			for _, call := range o.lbCalls[tc.lb] {
				got = append(got, strings.TrimSpace(call.Action+" "+call.ErrorCode))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls filed under %s: %v, want %v", tc.lb, got, tc.want)
			}
			if f := o.svcFlows[tc.svc]; f.Step != tc.step {
				t.Errorf("%s is at step %d, want %d: %+v", tc.svc, f.Step, tc.step, f.Steps)
			}
		})
	}
}
