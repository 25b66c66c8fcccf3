package awsapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

type lab struct {
	cloud *cloud.Cloud
	keys  *Keys
	h     *Handler
	url   string
	cfg   aws.Config
	inst  []cloud.Instance
	net   cloud.AWSNetwork
}

func newLab(t testing.TB) *lab {
	t.Helper()
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	keys := NewKeys()
	creds, err := keys.Issue("test")
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Cloud: c, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	l := &lab{cloud: c, keys: keys, h: h, url: srv.URL, net: c.AWSNetworkInfo()}
	for range 2 {
		in, err := c.RunInstance(cloud.WithCaller(context.Background(), "user"), cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		l.inst = append(l.inst, in)
	}
	l.cfg = aws.Config{
		Region:      c.Config().Region,
		Credentials: credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
	return l
}

func (l *lab) ec2() *ec2.Client {
	return ec2.NewFromConfig(l.cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(l.url) })
}

func (l *lab) elb() *elb.Client {
	return elb.NewFromConfig(l.cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(l.url) })
}

func (l *lab) elbv2() *elbv2.Client {
	return elbv2.NewFromConfig(l.cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(l.url) })
}

// wantCode checks err is an API error with code ("" = no error).
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

func (l *lab) lastCall(t *testing.T) cloud.Call {
	t.Helper()
	calls := l.cloud.Calls(0)
	return calls[len(calls)-1]
}

type step struct {
	name string
	do   func(t *testing.T) error
	code string
	// action and service the call log must show last (action "" = skip)
	action, service string
}

func run(t *testing.T, l *lab, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			wantCode(t, s.do(t), s.code)
			if s.action != "" {
				c := l.lastCall(t)
				if c.Action != s.action || c.Service != s.service || c.Caller != "test" || c.ErrorCode != s.code {
					t.Fatalf("call log: %s %s caller %s code %q; want %s %s test %q", c.Service, c.Action, c.Caller, c.ErrorCode, s.service, s.action, s.code)
				}
			}
		})
	}
}

func TestEC2(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	c := l.ec2()
	var sgID string
	perm := []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}}
	run(t, l, []step{
		{name: "DescribeInstances by private-dns-name", action: "DescribeInstances", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
				{Name: aws.String("private-dns-name"), Values: []string{l.inst[1].PrivateDNSName}},
				{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
			if err != nil {
				return err
			}
			if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
				t.Fatalf("reservations %+v", out.Reservations)
			}
			in := out.Reservations[0].Instances[0]
			if aws.ToString(in.InstanceId) != l.inst[1].ID || aws.ToString(in.Placement.AvailabilityZone) != l.inst[1].Zone ||
				in.State.Name != ec2types.InstanceStateNameRunning || aws.ToInt32(in.State.Code) != 16 ||
				aws.ToString(in.PrivateIpAddress) != l.inst[1].PrivateIP || aws.ToString(in.VpcId) != l.net.VPCID ||
				len(in.SecurityGroups) != 1 || aws.ToString(in.SecurityGroups[0].GroupId) != l.net.NodeGroupID ||
				len(in.NetworkInterfaces) != 1 || aws.ToInt32(in.NetworkInterfaces[0].Attachment.DeviceIndex) != 0 || in.LaunchTime == nil {
				t.Fatalf("instance %+v", in)
			}
			return nil
		}},
		{name: "a Pod's address on the node's interface (vpc-cni)", action: "DescribeNetworkInterfaces", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			pod := "10.0.128.7"
			if err := l.cloud.AssignPodAddress(l.inst[1].ID, netip.MustParseAddr(pod)); err != nil {
				t.Fatal(err)
			}
			defer l.cloud.UnassignPodAddress(l.inst[1].ID, netip.MustParseAddr(pod))
			// Where the AWS Load Balancer Controller looks for it
			// (pod_eni_info_resolver.go: the node's instance, then its ENIs).
			di, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("network-interface.addresses.private-ip-address"), Values: []string{pod}}}})
			if err != nil {
				return err
			}
			if len(di.Reservations) != 1 || aws.ToString(di.Reservations[0].Instances[0].InstanceId) != l.inst[1].ID {
				t.Fatalf("reservations %+v", di.Reservations)
			}
			addrs := di.Reservations[0].Instances[0].NetworkInterfaces[0].PrivateIpAddresses
			if len(addrs) != 2 || !aws.ToBool(addrs[0].Primary) || aws.ToString(addrs[1].PrivateIpAddress) != pod || aws.ToBool(addrs[1].Primary) {
				t.Fatalf("instance's interface addresses %+v", addrs)
			}
			out, err := c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []ec2types.Filter{
				{Name: aws.String("vpc-id"), Values: []string{l.net.VPCID}}, {Name: aws.String("addresses.private-ip-address"), Values: []string{pod}}}})
			if err != nil {
				return err
			}
			if len(out.NetworkInterfaces) != 1 || aws.ToString(out.NetworkInterfaces[0].Attachment.InstanceId) != l.inst[1].ID {
				t.Fatalf("interfaces %+v", out.NetworkInterfaces)
			}
			if a := out.NetworkInterfaces[0].PrivateIpAddresses; len(a) != 2 || aws.ToString(a[1].PrivateIpAddress) != pod || aws.ToBool(a[1].Primary) || aws.ToString(a[1].PrivateDnsName) == "" {
				t.Fatalf("interface addresses %+v", a)
			}
			return nil
		}},
		{name: "DescribeInstances unknown ID", action: "DescribeInstances", service: cloud.ServiceEC2, code: "InvalidInstanceID.NotFound", do: func(t *testing.T) error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000000"}})
			return err
		}},
		{name: "DescribeInstances unknown filter", code: "InvalidParameterValue", do: func(t *testing.T) error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("nope"), Values: []string{"x"}}}})
			return err
		}},
		{name: "DescribeInstanceTopology", action: "DescribeInstanceTopology", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{InstanceIds: []string{l.inst[0].ID}})
			if err == nil && len(out.Instances) != 0 {
				t.Fatalf("topologies %+v", out.Instances)
			}
			return err
		}},
		{name: "DescribeSubnets tagged for ELBs", action: "DescribeSubnets", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{l.net.VPCID}}}})
			if err != nil {
				return err
			}
			if len(out.Subnets) != len(l.net.Subnets) {
				t.Fatalf("%d subnets", len(out.Subnets))
			}
			tags := map[string]string{}
			for _, tg := range out.Subnets[0].Tags {
				tags[*tg.Key] = *tg.Value
			}
			if tags["kubernetes.io/role/elb"] != "1" || tags[l.cloud.ClusterTagKey()] == "" {
				t.Fatalf("subnet tags %v", tags)
			}
			return nil
		}},
		{name: "DescribeVpcs", action: "DescribeVpcs", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{l.net.VPCID}})
			if err == nil && (len(out.Vpcs) != 1 || aws.ToString(out.Vpcs[0].CidrBlock) != l.net.CIDR) {
				t.Fatalf("vpcs %+v", out.Vpcs)
			}
			return err
		}},
		{name: "DescribeAvailabilityZones", action: "DescribeAvailabilityZones", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
			if err == nil && len(out.AvailabilityZones) != len(l.net.Subnets) {
				t.Fatalf("zones %+v", out.AvailabilityZones)
			}
			return err
		}},
		{name: "DescribeAvailabilityZones by ID", action: "DescribeAvailabilityZones", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			id := l.net.Subnets[0].Zone + "-az"
			out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneIds: []string{id}})
			if err == nil && (len(out.AvailabilityZones) != 1 || aws.ToString(out.AvailabilityZones[0].ZoneId) != id) {
				t.Fatalf("zones %+v, want only %s", out.AvailabilityZones, id)
			}
			return err
		}},
		{name: "CreateRoute", action: "CreateRoute", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(l.net.RouteTableID), DestinationCidrBlock: aws.String("10.244.1.0/24"), InstanceId: aws.String(l.inst[0].ID)})
			return err
		}},
		{name: "CreateRoute again", action: "CreateRoute", service: cloud.ServiceEC2, code: "RouteAlreadyExists", do: func(t *testing.T) error {
			_, err := c.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(l.net.RouteTableID), DestinationCidrBlock: aws.String("10.244.1.0/24"), InstanceId: aws.String(l.inst[0].ID)})
			return err
		}},
		{name: "DescribeRouteTables", action: "DescribeRouteTables", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{{Name: aws.String("route-table-id"), Values: []string{l.net.RouteTableID}}}})
			if err != nil {
				return err
			}
			rs := out.RouteTables[0].Routes
			if len(rs) != 3 || aws.ToString(rs[0].GatewayId) != "local" || aws.ToString(rs[1].GatewayId) != l.net.InternetGatewayID || aws.ToString(rs[2].InstanceId) != l.inst[0].ID {
				t.Fatalf("routes %+v", rs)
			}
			return nil
		}},
		{name: "DeleteRoute", action: "DeleteRoute", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(l.net.RouteTableID), DestinationCidrBlock: aws.String("10.244.1.0/24")})
			return err
		}},
		{name: "DeleteRoute wrong table", code: "InvalidRouteTableID.NotFound", do: func(t *testing.T) error {
			_, err := c.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String("rtb-0"), DestinationCidrBlock: aws.String("10.244.1.0/24")})
			return err
		}},
		{name: "ModifyInstanceAttribute SourceDestCheck", action: "ModifyInstanceAttribute", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(l.inst[0].ID), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)}})
			return err
		}},
		{name: "SourceDestCheck reads back off", do: func(t *testing.T) error {
			out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{l.inst[0].ID}})
			if err == nil && aws.ToBool(out.Reservations[0].Instances[0].SourceDestCheck) {
				t.Fatal("SourceDestCheck still true")
			}
			return err
		}},
		{name: "CreateSecurityGroup", action: "CreateSecurityGroup", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-a1"), Description: aws.String("d"), VpcId: aws.String(l.net.VPCID)})
			if err == nil {
				sgID = aws.ToString(out.GroupId)
			}
			return err
		}},
		{name: "CreateSecurityGroup duplicate", action: "CreateSecurityGroup", service: cloud.ServiceEC2, code: "InvalidGroup.Duplicate", do: func(t *testing.T) error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-a1"), Description: aws.String("d"), VpcId: aws.String(l.net.VPCID)})
			return err
		}},
		{name: "CreateTags", action: "CreateTags", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{sgID}, Tags: []ec2types.Tag{{Key: aws.String(l.cloud.ClusterTagKey()), Value: aws.String("owned")}}})
			return err
		}},
		{name: "AuthorizeSecurityGroupIngress", action: "AuthorizeSecurityGroupIngress", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(sgID), IpPermissions: perm})
			return err
		}},
		{name: "AuthorizeSecurityGroupIngress duplicate", action: "AuthorizeSecurityGroupIngress", service: cloud.ServiceEC2, code: "InvalidPermission.Duplicate", do: func(t *testing.T) error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(sgID), IpPermissions: perm})
			return err
		}},
		{name: "node group allows the LB group", action: "AuthorizeSecurityGroupIngress", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(l.net.NodeGroupID),
				IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(sgID)}}}}})
			return err
		}},
		{name: "DescribeSecurityGroups by rule source", action: "DescribeSecurityGroups", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("ip-permission.group-id"), Values: []string{sgID}}}})
			if err == nil && (len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupId) != l.net.NodeGroupID) {
				t.Fatalf("groups %+v", out.SecurityGroups)
			}
			return err
		}},
		{name: "DeleteSecurityGroup in use", action: "DeleteSecurityGroup", service: cloud.ServiceEC2, code: "DependencyViolation", do: func(t *testing.T) error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(sgID)})
			return err
		}},
		{name: "RevokeSecurityGroupIngress", action: "RevokeSecurityGroupIngress", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(l.net.NodeGroupID),
				IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(sgID)}}}}})
			return err
		}},
		{name: "DeleteTags", action: "DeleteTags", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{sgID}, Tags: []ec2types.Tag{{Key: aws.String(l.cloud.ClusterTagKey())}}})
			return err
		}},
		{name: "DeleteSecurityGroup", action: "DeleteSecurityGroup", service: cloud.ServiceEC2, do: func(t *testing.T) error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(sgID)})
			return err
		}},
		{name: "denied is UnauthorizedOperation", action: "DescribeSubnets", service: cloud.ServiceEC2, code: "UnauthorizedOperation", do: func(t *testing.T) error {
			if err := l.cloud.SetFaults(cloud.Faults{Deny: []string{"DescribeSubnets"}}); err != nil {
				t.Fatal(err)
			}
			defer l.cloud.SetFaults(cloud.Faults{})
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			return err
		}},
	})
}

func TestELB(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	c := l.elb()
	name := "a0123456789abcdef0123456789abcde"
	run(t, l, []step{
		{name: "CreateLoadBalancer", action: "CreateLoadBalancer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{LoadBalancerName: aws.String(name),
				Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}},
				Subnets:   []string{l.net.Subnets[0].ID}, SecurityGroups: []string{l.net.NodeGroupID},
				Tags: []elbtypes.Tag{{Key: aws.String(l.cloud.ClusterTagKey()), Value: aws.String("owned")}}})
			if err == nil && !strings.HasSuffix(aws.ToString(out.DNSName), ".elb.amazonaws.com") {
				t.Fatalf("DNS name %q", aws.ToString(out.DNSName))
			}
			return err
		}},
		{name: "ConfigureHealthCheck", action: "ConfigureHealthCheck", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(name), HealthCheck: &elbtypes.HealthCheck{
				Target: aws.String("TCP:30080"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)}})
			return err
		}},
		{name: "RegisterInstancesWithLoadBalancer", action: "RegisterInstancesWithLoadBalancer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(name),
				Instances: []elbtypes.Instance{{InstanceId: aws.String(l.inst[0].ID)}, {InstanceId: aws.String(l.inst[1].ID)}}})
			if err == nil && len(out.Instances) != 2 {
				t.Fatalf("instances %+v", out.Instances)
			}
			return err
		}},
		{name: "DeregisterInstancesFromLoadBalancer", action: "DeregisterInstancesFromLoadBalancer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String(name),
				Instances: []elbtypes.Instance{{InstanceId: aws.String(l.inst[1].ID)}}})
			if err == nil && len(out.Instances) != 1 {
				t.Fatalf("instances %+v", out.Instances)
			}
			return err
		}},
		{name: "CreateLoadBalancerListeners", action: "CreateLoadBalancerListeners", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String(name),
				Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 443, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30443)}}})
			return err
		}},
		{name: "DeleteLoadBalancerListeners", action: "DeleteLoadBalancerListeners", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String(name), LoadBalancerPorts: []int32{443}})
			return err
		}},
		{name: "ModifyLoadBalancerAttributes", action: "ModifyLoadBalancerAttributes", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(name), LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{
				CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: true}, ConnectionSettings: &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(120)}}})
			return err
		}},
		{name: "DescribeLoadBalancerAttributes", action: "DescribeLoadBalancerAttributes", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String(name)})
			if err == nil && (!out.LoadBalancerAttributes.CrossZoneLoadBalancing.Enabled || aws.ToInt32(out.LoadBalancerAttributes.ConnectionSettings.IdleTimeout) != 120) {
				t.Fatalf("attributes %+v", out.LoadBalancerAttributes)
			}
			return err
		}},
		{name: "ApplySecurityGroupsToLoadBalancer", action: "ApplySecurityGroupsToLoadBalancer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: aws.String(name), SecurityGroups: []string{l.net.NodeGroupID}})
			return err
		}},
		{name: "AttachLoadBalancerToSubnets", action: "AttachLoadBalancerToSubnets", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: aws.String(name), Subnets: []string{l.net.Subnets[1].ID}})
			if err == nil && len(out.Subnets) != 2 {
				t.Fatalf("subnets %v", out.Subnets)
			}
			return err
		}},
		{name: "DetachLoadBalancerFromSubnets", action: "DetachLoadBalancerFromSubnets", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: aws.String(name), Subnets: []string{l.net.Subnets[1].ID}})
			return err
		}},
		{name: "AddTags", action: "AddTags", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{name}, Tags: []elbtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}},
		{name: "DescribeTags", action: "DescribeTags", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{name}})
			if err == nil && len(out.TagDescriptions[0].Tags) != 2 {
				t.Fatalf("tags %+v", out.TagDescriptions)
			}
			return err
		}},
		{name: "DescribeLoadBalancers", action: "DescribeLoadBalancers", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
			if err != nil {
				return err
			}
			d := out.LoadBalancerDescriptions[0]
			if aws.ToString(d.HealthCheck.Target) != "TCP:30080" || len(d.ListenerDescriptions) != 1 || d.ListenerDescriptions[0].Listener.LoadBalancerPort != 80 ||
				len(d.Instances) != 1 || aws.ToString(d.Instances[0].InstanceId) != l.inst[0].ID || aws.ToString(d.VPCId) != l.net.VPCID ||
				!slices.Equal(d.Subnets, []string{l.net.Subnets[0].ID}) {
				t.Fatalf("description %+v", d)
			}
			return nil
		}},
		{name: "CreateLoadBalancerPolicy", action: "CreateLoadBalancerPolicy", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{LoadBalancerName: aws.String(name), PolicyName: aws.String("k8s-proxyprotocol-enabled"),
				PolicyTypeName: aws.String("ProxyProtocolPolicyType"), PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}})
			return err
		}},
		{name: "SetLoadBalancerPoliciesForBackendServer unknown policy", action: "SetLoadBalancerPoliciesForBackendServer", service: cloud.ServiceELB, code: "PolicyNotFound", do: func(t *testing.T) error {
			_, err := c.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{LoadBalancerName: aws.String(name), InstancePort: aws.Int32(30080), PolicyNames: []string{"nope"}})
			return err
		}},
		{name: "SetLoadBalancerPoliciesForBackendServer", action: "SetLoadBalancerPoliciesForBackendServer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{LoadBalancerName: aws.String(name), InstancePort: aws.Int32(30080), PolicyNames: []string{"k8s-proxyprotocol-enabled"}})
			if err != nil {
				return err
			}
			v, ok := l.cloud.LookupLoadBalancer(name)
			if !ok || !slices.Equal(v.ProxyProtocolPorts, []int32{30080}) {
				t.Fatalf("view %+v: want proxy protocol on 30080", v)
			}
			return nil
		}},
		{name: "DescribeLoadBalancers backend policies", action: "DescribeLoadBalancers", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
			if err != nil {
				return err
			}
			b := out.LoadBalancerDescriptions[0].BackendServerDescriptions
			if len(b) != 1 || aws.ToInt32(b[0].InstancePort) != 30080 || !slices.Equal(b[0].PolicyNames, []string{"k8s-proxyprotocol-enabled"}) {
				t.Fatalf("backend descriptions %+v", b)
			}
			return nil
		}},
		{name: "DescribeInstanceHealth before a check", action: "DescribeInstanceHealth", service: cloud.ServiceELB, do: func(t *testing.T) error {
			out, err := c.DescribeInstanceHealth(ctx, &elb.DescribeInstanceHealthInput{LoadBalancerName: aws.String(name)})
			if err == nil && (len(out.InstanceStates) != 1 || aws.ToString(out.InstanceStates[0].InstanceId) != l.inst[0].ID ||
				aws.ToString(out.InstanceStates[0].State) != "OutOfService" || aws.ToString(out.InstanceStates[0].ReasonCode) != "ELB") {
				t.Fatalf("instance states %+v", out.InstanceStates)
			}
			return err
		}},
		{name: "DescribeInstanceHealth after a passed check", action: "DescribeInstanceHealth", service: cloud.ServiceELB, do: func(t *testing.T) error {
			if err := l.cloud.SetTargetsHealth(name, []cloud.TargetHealthUpdate{{ID: l.inst[0].ID, Port: 30080, Health: cloud.TargetHealthy}}); err != nil {
				t.Fatal(err)
			}
			out, err := c.DescribeInstanceHealth(ctx, &elb.DescribeInstanceHealthInput{LoadBalancerName: aws.String(name), Instances: []elbtypes.Instance{{InstanceId: aws.String(l.inst[0].ID)}}})
			if err == nil && (len(out.InstanceStates) != 1 || aws.ToString(out.InstanceStates[0].State) != "InService") {
				t.Fatalf("instance states %+v", out.InstanceStates)
			}
			return err
		}},
		{name: "DescribeInstanceHealth of an instance not registered", action: "DescribeInstanceHealth", service: cloud.ServiceELB, code: "InvalidInstance", do: func(t *testing.T) error {
			_, err := c.DescribeInstanceHealth(ctx, &elb.DescribeInstanceHealthInput{LoadBalancerName: aws.String(name), Instances: []elbtypes.Instance{{InstanceId: aws.String(l.inst[1].ID)}}})
			return err
		}},
		{name: "DescribeLoadBalancers unknown", action: "DescribeLoadBalancers", service: cloud.ServiceELB, code: "LoadBalancerNotFound", do: func(t *testing.T) error {
			_, err := c.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"nope"}})
			return err
		}},
		{name: "DeleteLoadBalancer", action: "DeleteLoadBalancer", service: cloud.ServiceELB, do: func(t *testing.T) error {
			_, err := c.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)})
			return err
		}},
		{name: "throttled is Throttling", action: "DescribeLoadBalancers", service: cloud.ServiceELB, code: "Throttling", do: func(t *testing.T) error {
			if err := l.cloud.SetFaults(cloud.Faults{QPS: 0.001, Burst: 1}); err != nil {
				t.Fatal(err)
			}
			defer l.cloud.SetFaults(cloud.Faults{})
			_, _ = c.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
			_, err := c.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
			return err
		}},
	})
}

func TestELBv2(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	c := l.elbv2()
	var lbARN, tgARN, lsARN string
	run(t, l, []step{
		{name: "CreateLoadBalancer", action: "CreateLoadBalancer", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("a1nlb"), Type: v2types.LoadBalancerTypeEnumNetwork,
				Scheme: v2types.LoadBalancerSchemeEnumInternetFacing, Subnets: []string{l.net.Subnets[0].ID}})
			if err == nil {
				lb := out.LoadBalancers[0]
				lbARN = aws.ToString(lb.LoadBalancerArn)
				if lb.State.Code != v2types.LoadBalancerStateEnumActive || aws.ToString(lb.VpcId) != l.net.VPCID || len(lb.AvailabilityZones) != 1 {
					t.Fatalf("lb %+v", lb)
				}
			}
			return err
		}},
		{name: "CreateTargetGroup", action: "CreateTargetGroup", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String("k8s-default-web-abc"), Protocol: v2types.ProtocolEnumTcp,
				Port: aws.Int32(30080), VpcId: aws.String(l.net.VPCID), TargetType: v2types.TargetTypeEnumInstance, HealthCheckProtocol: v2types.ProtocolEnumTcp})
			if err == nil {
				tgARN = aws.ToString(out.TargetGroups[0].TargetGroupArn)
			}
			return err
		}},
		{name: "CreateListener", action: "CreateListener", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.CreateListener(ctx, &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(80), Protocol: v2types.ProtocolEnumTcp,
				DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}}})
			if err == nil {
				lsARN = aws.ToString(out.Listeners[0].ListenerArn)
			}
			return err
		}},
		{name: "DescribeListeners", action: "DescribeListeners", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
			if err == nil && (len(out.Listeners) != 1 || aws.ToInt32(out.Listeners[0].Port) != 80 || aws.ToString(out.Listeners[0].DefaultActions[0].TargetGroupArn) != tgARN) {
				t.Fatalf("listeners %+v", out.Listeners)
			}
			return err
		}},
		{name: "ModifyListener", action: "ModifyListener", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.ModifyListener(ctx, &elbv2.ModifyListenerInput{ListenerArn: aws.String(lsARN), Port: aws.Int32(8080)})
			return err
		}},
		{name: "RegisterTargets", action: "RegisterTargets", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: []v2types.TargetDescription{
				{Id: aws.String(l.inst[0].ID), Port: aws.Int32(30080)}, {Id: aws.String(l.inst[1].ID), Port: aws.Int32(30080)}}})
			return err
		}},
		{name: "DeregisterTargets", action: "DeregisterTargets", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: []v2types.TargetDescription{{Id: aws.String(l.inst[1].ID), Port: aws.Int32(30080)}}})
			return err
		}},
		{name: "DescribeTargetHealth", action: "DescribeTargetHealth", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
			if err == nil && (len(out.TargetHealthDescriptions) != 1 || out.TargetHealthDescriptions[0].TargetHealth.State != v2types.TargetHealthStateEnumHealthy) {
				t.Fatalf("health %+v", out.TargetHealthDescriptions)
			}
			return err
		}},
		{name: "ModifyTargetGroup", action: "ModifyTargetGroup", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: aws.String(tgARN), HealthCheckIntervalSeconds: aws.Int32(10)})
			return err
		}},
		{name: "DescribeTargetGroups", action: "DescribeTargetGroups", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
			if err == nil && (len(out.TargetGroups) != 1 || aws.ToInt32(out.TargetGroups[0].Port) != 30080 || aws.ToInt32(out.TargetGroups[0].HealthCheckIntervalSeconds) != 10) {
				t.Fatalf("target groups %+v", out.TargetGroups)
			}
			return err
		}},
		{name: "ModifyTargetGroupAttributes", action: "ModifyTargetGroupAttributes", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(tgARN),
				Attributes: []v2types.TargetGroupAttribute{{Key: aws.String("proxy_protocol_v2.enabled"), Value: aws.String("true")}}})
			return err
		}},
		{name: "DescribeTargetGroupAttributes", action: "DescribeTargetGroupAttributes", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(tgARN)})
			if err == nil && !slices.ContainsFunc(out.Attributes, func(a v2types.TargetGroupAttribute) bool {
				return *a.Key == "proxy_protocol_v2.enabled" && *a.Value == "true"
			}) {
				t.Fatalf("attributes %+v", out.Attributes)
			}
			return err
		}},
		{name: "ModifyLoadBalancerAttributes", action: "ModifyLoadBalancerAttributes", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(lbARN),
				Attributes: []v2types.LoadBalancerAttribute{{Key: aws.String("load_balancing.cross_zone.enabled"), Value: aws.String("true")}}})
			return err
		}},
		{name: "DescribeLoadBalancerAttributes", action: "DescribeLoadBalancerAttributes", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(lbARN)})
			if err == nil && len(out.Attributes) < 3 {
				t.Fatalf("attributes %+v", out.Attributes)
			}
			return err
		}},
		{name: "AddTags", action: "AddTags", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{lbARN, tgARN}, Tags: []v2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}},
		{name: "DescribeTags", action: "DescribeTags", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{tgARN}})
			if err == nil && (len(out.TagDescriptions) != 1 || len(out.TagDescriptions[0].Tags) != 1) {
				t.Fatalf("tags %+v", out.TagDescriptions)
			}
			return err
		}},
		{name: "DescribeLoadBalancers", action: "DescribeLoadBalancers", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			out, err := c.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{"a1nlb"}})
			if err == nil && (len(out.LoadBalancers) != 1 || aws.ToString(out.LoadBalancers[0].LoadBalancerArn) != lbARN) {
				t.Fatalf("lbs %+v", out.LoadBalancers)
			}
			return err
		}},
		{name: "DeleteTargetGroup in use", action: "DeleteTargetGroup", service: cloud.ServiceELBv2, code: "ResourceInUse", do: func(t *testing.T) error {
			_, err := c.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tgARN)})
			return err
		}},
		{name: "DeleteListener", action: "DeleteListener", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(lsARN)})
			return err
		}},
		{name: "DeleteTargetGroup", action: "DeleteTargetGroup", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tgARN)})
			return err
		}},
		{name: "DeleteLoadBalancer", action: "DeleteLoadBalancer", service: cloud.ServiceELBv2, do: func(t *testing.T) error {
			_, err := c.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lbARN)})
			return err
		}},
		{name: "DescribeLoadBalancers unknown", action: "DescribeLoadBalancers", service: cloud.ServiceELBv2, code: "LoadBalancerNotFound", do: func(t *testing.T) error {
			_, err := c.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{lbARN}})
			return err
		}},
	})
}

// A target group's HTTP matcher (Matcher.HttpCode) is kept and answered as
// given, an NLB's default is 200-399, a matcher out of NLB's 200-599 or on
// a TCP check is refused and changes nothing, and moving the check to TCP
// drops it (the ELBv2 API reference, Matcher).
func TestTargetGroupMatcher(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	c := l.elbv2()
	create := func(name string, proto v2types.ProtocolEnum, m *v2types.Matcher) (*elbv2.CreateTargetGroupOutput, error) {
		return c.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String(name), Protocol: v2types.ProtocolEnumTcp,
			Port: aws.Int32(30080), VpcId: aws.String(l.net.VPCID), HealthCheckProtocol: proto, HealthCheckPath: aws.String("/healthz"), Matcher: m})
	}
	matcherOf := func(tg v2types.TargetGroup) string {
		if tg.Matcher == nil {
			return ""
		}
		return aws.ToString(tg.Matcher.HttpCode)
	}
	out, err := create("m-default", v2types.ProtocolEnumHttp, nil)
	if err != nil || matcherOf(out.TargetGroups[0]) != "200-399" {
		t.Fatalf("default matcher: %v %+v", err, out)
	}
	out, err = create("m-given", v2types.ProtocolEnumHttp, &v2types.Matcher{HttpCode: aws.String("200,202-204")})
	if err != nil || matcherOf(out.TargetGroups[0]) != "200,202-204" {
		t.Fatalf("given matcher: %v %+v", err, out)
	}
	arn := out.TargetGroups[0].TargetGroupArn
	for _, tc := range []struct {
		name, code string
		proto      v2types.ProtocolEnum
	}{
		{"below 200", "199", v2types.ProtocolEnumHttp},
		{"above 599", "200-600", v2types.ProtocolEnumHttp},
		{"not a code", "ok", v2types.ProtocolEnumHttp},
		{"on a TCP check", "200", v2types.ProtocolEnumTcp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := create("m-bad", tc.proto, &v2types.Matcher{HttpCode: aws.String(tc.code)}); err == nil || !strings.Contains(err.Error(), "ValidationError") {
				t.Fatalf("create with matcher %q: %v, want a ValidationError", tc.code, err)
			}
			if _, err := c.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: arn, HealthCheckProtocol: tc.proto,
				Matcher: &v2types.Matcher{HttpCode: aws.String(tc.code)}}); err == nil {
				t.Fatalf("modify with matcher %q succeeded", tc.code)
			}
			got, err := c.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{*arn}})
			if err != nil || matcherOf(got.TargetGroups[0]) != "200,202-204" || got.TargetGroups[0].HealthCheckProtocol != v2types.ProtocolEnumHttp {
				t.Fatalf("after a refused change: %v %+v", err, got)
			}
		})
	}
	mod, err := c.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: arn, HealthCheckProtocol: v2types.ProtocolEnumTcp})
	if err != nil || matcherOf(mod.TargetGroups[0]) != "" {
		t.Fatalf("moved to TCP: %v %+v", err, mod)
	}
}
