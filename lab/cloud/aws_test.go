package cloud

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAWSModelSecurityGroups(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := WithService(ctxAs("service-controller"), ServiceEC2)
	net := c.AWSNetworkInfo()
	id, err := c.CreateSecurityGroup(ctx, "k8s-elb-a1", "for a1", net.VPCID, nil)
	if err != nil {
		t.Fatal(err)
	}
	tcp80 := []IPPermission{{Protocol: "tcp", FromPort: 80, ToPort: 80, CIDRs: []string{"0.0.0.0/0"}}}
	fromLB := []IPPermission{{Protocol: "-1", GroupIDs: []string{id}}}
	for _, tc := range []struct {
		name string
		do   func() error
		code string
	}{
		{"create duplicate", func() error { _, err := c.CreateSecurityGroup(ctx, "k8s-elb-a1", "x", "", nil); return err }, ErrGroupDuplicate},
		{"authorize", func() error { return c.AuthorizeIngress(ctx, id, tcp80) }, ""},
		{"authorize again", func() error { return c.AuthorizeIngress(ctx, id, tcp80) }, ErrPermissionDuplicate},
		{"node group allows the LB group", func() error { return c.AuthorizeIngress(ctx, net.NodeGroupID, fromLB) }, ""},
		{"delete while referenced", func() error { return c.DeleteSecurityGroup(ctx, id) }, ErrDependencyViolation},
		{"revoke", func() error { return c.RevokeIngress(ctx, net.NodeGroupID, fromLB) }, ""},
		{"revoke again", func() error { return c.RevokeIngress(ctx, net.NodeGroupID, fromLB) }, ErrPermissionNotFound},
		{"delete", func() error { return c.DeleteSecurityGroup(ctx, id) }, ""},
		{"delete again", func() error { return c.DeleteSecurityGroup(ctx, id) }, ErrGroupNotFound},
		{"unknown filter", func() error {
			_, err := c.DescribeSecurityGroupsAWS(ctx, nil, []Filter{{Name: "nope", Values: []string{"x"}}})
			return err
		}, ErrInvalidFilter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.code == "" && err != nil || tc.code != "" && !IsCode(err, tc.code) {
				t.Fatalf("err = %v, want code %q", err, tc.code)
			}
			if got := lastCall(t, c); got.Service != ServiceEC2 || got.ErrorCode != tc.code {
				t.Fatalf("call log: service %q code %q", got.Service, got.ErrorCode)
			}
		})
	}
	gs, err := c.DescribeSecurityGroupsAWS(ctx, nil, []Filter{{Name: "tag-key", Values: []string{c.ClusterTagKey()}}})
	if err != nil || len(gs) != 1 || gs[0].ID != net.NodeGroupID {
		t.Fatalf("cluster-tagged groups = %+v, %v; want the node group", gs, err)
	}
}

func TestAWSModelFaultCodes(t *testing.T) {
	for _, tc := range []struct {
		service, deny, throttle string
	}{
		{ServiceEC2, ErrUnauthorizedOperation, ErrRequestLimitExceeded},
		{ServiceELB, ErrAccessDenied, ErrThrottling},
	} {
		t.Run(tc.service, func(t *testing.T) {
			c := newTestCloud(t, nil)
			ctx := WithService(ctxAs("service-controller"), tc.service)
			call := func() error {
				if tc.service == ServiceEC2 {
					_, err := c.DescribeSubnets(ctx, nil, nil)
					return err
				}
				_, err := c.DescribeELBs(ctx, nil)
				return err
			}
			action := map[string]string{ServiceEC2: ActionDescribeSubnets, ServiceELB: ActionDescribeLoadBalancers}[tc.service]
			if err := c.SetFaults(Faults{Deny: []string{action}}); err != nil {
				t.Fatal(err)
			}
			if err := call(); !IsCode(err, tc.deny) {
				t.Fatalf("denied: %v, want %s", err, tc.deny)
			}
			if err := c.SetFaults(Faults{QPS: 0.001, Burst: 1}); err != nil {
				t.Fatal(err)
			}
			_ = call()
			if err := call(); !IsCode(err, tc.throttle) {
				t.Fatalf("throttled: %v, want %s", err, tc.throttle)
			}
		})
	}
}

func TestAWSModelELBPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	c := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	inst := mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("service-controller")
	net := c.AWSNetworkInfo()
	dns, err := c.CreateELB(ctx, CreateELBInput{Name: "a1", Subnets: []string{net.Subnets[0].ID},
		Listeners: []ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dns, "a1-") || !strings.HasSuffix(dns, "."+c.Config().Region+".elb.amazonaws.com") {
		t.Fatalf("DNS name %q", dns)
	}
	if _, err := c.ELBRegisterInstances(ctx, "a1", []string{inst.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeELBs(ctx, []string{"nope"}); !IsCode(err, ErrLBNotFound) {
		t.Fatalf("unknown ELB: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	if got := c2.AWSNetworkInfo(); got.VPCID != net.VPCID || got.Subnets[0].ID != net.Subnets[0].ID {
		t.Fatalf("network after restart %+v, want %+v", got, net)
	}
	lbs, err := c2.DescribeELBs(ctx, nil)
	if err != nil || len(lbs) != 1 || lbs[0].DNSName != dns || !slices.Equal(lbs[0].Instances, []string{inst.ID}) {
		t.Fatalf("ELBs after restart: %+v, %v", lbs, err)
	}
}
