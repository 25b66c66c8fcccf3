package awsapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

const ownerID = Account

func (h *Handler) ec2Actions() []Action {
	return []Action{
		act(h.describeInstances),
		act(h.describeInstanceTopology),
		act(h.describeSubnets),
		act(h.describeVpcs),
		act(h.describeAvailabilityZones),
		act(h.describeRouteTables),
		act(h.createRoute),
		act(h.deleteRoute),
		act(h.modifyInstanceAttribute),
		act(h.describeSecurityGroups),
		act(h.createSecurityGroup),
		act(h.deleteSecurityGroup),
		act(h.authorizeSecurityGroupIngress),
		act(h.revokeSecurityGroupIngress),
		act(h.createTags),
		act(h.deleteTags),
		act(h.describeTags),
		act(h.describeNetworkInterfaces),
		act(h.describeInstanceStatus),
		act(h.describeRegions),
		act(h.terminateInstances),
		act(h.stopInstances),
		act(h.startInstances),
	}
}

func filters(fs []ec2types.Filter) []cloud.Filter {
	out := make([]cloud.Filter, len(fs))
	for i, f := range fs {
		out[i] = cloud.Filter{Name: aws.ToString(f.Name), Values: f.Values}
	}
	return out
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	out := []ec2types.Tag{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func tagMap(ts []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range ts {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func instanceState(s cloud.InstanceState) *ec2types.InstanceState {
	return &ec2types.InstanceState{Code: aws.Int32(cloud.InstanceStateCode(s)), Name: ec2types.InstanceStateName(s)}
}

func (h *Handler) describeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) (*ec2.DescribeInstancesOutput, error) {
	if len(in.InstanceIds) > 0 && in.MaxResults != nil {
		return nil, &apiError{400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults"}
	}
	views, err := h.cfg.Cloud.DescribeInstancesAWS(ctx, in.InstanceIds, filters(in.Filters))
	if err != nil {
		return nil, err
	}
	views, next, err := page(views, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{}, NextToken: next}
	for _, v := range views {
		groups := make([]ec2types.GroupIdentifier, len(v.SecurityGroups))
		for i, g := range v.SecurityGroups {
			groups[i] = ec2types.GroupIdentifier{GroupId: aws.String(g.ID), GroupName: aws.String(g.Name)}
		}
		launch := v.LaunchTime
		inst := ec2types.Instance{
			InstanceId:   aws.String(v.ID),
			InstanceType: ec2types.InstanceType(v.InstanceType),
			ImageId:      aws.String(cloud.ImageID),
			Architecture: ec2types.ArchitectureValuesX8664,
			// What an EBS-backed HVM instance on Nitro shows; EC2 reports
			// xen for both Xen and Nitro
			// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Instance.html).
			Hypervisor:         ec2types.HypervisorTypeXen,
			RootDeviceType:     ec2types.DeviceTypeEbs,
			RootDeviceName:     aws.String("/dev/xvda"),
			VirtualizationType: ec2types.VirtualizationTypeHvm,
			EbsOptimized:       aws.Bool(true),
			EnaSupport:         aws.Bool(true),
			AmiLaunchIndex:     aws.Int32(0),
			Placement:          &ec2types.Placement{AvailabilityZone: aws.String(v.Zone), Tenancy: ec2types.TenancyDefault},
			PrivateDnsName:     aws.String(v.PrivateDNSName),
			PrivateIpAddress:   aws.String(v.PrivateIP),
			State:              instanceState(v.State),
			VpcId:              aws.String(v.VPCID),
			SubnetId:           aws.String(v.SubnetID),
			SecurityGroups:     groups,
			SourceDestCheck:    aws.Bool(v.SourceDestCheck),
			LaunchTime:         &launch,
			Tags:               ec2Tags(v.Tags),
		}
		if v.State != cloud.InstanceTerminated {
			inst.NetworkInterfaces = []ec2types.InstanceNetworkInterface{{
				NetworkInterfaceId: aws.String("eni-" + strings.TrimPrefix(v.ID, "i-")),
				Attachment:         &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(0), Status: ec2types.AttachmentStatusAttached},
				PrivateIpAddress:   aws.String(v.PrivateIP),
				PrivateDnsName:     aws.String(v.PrivateDNSName),
				PrivateIpAddresses: instanceAddresses(v),
				Status:             ec2types.NetworkInterfaceStatusInUse,
				SubnetId:           aws.String(v.SubnetID),
				VpcId:              aws.String(v.VPCID),
				Groups:             groups,
				SourceDestCheck:    aws.Bool(v.SourceDestCheck),
			}}
		}
		out.Reservations = append(out.Reservations, ec2types.Reservation{
			ReservationId: aws.String("r-" + strings.TrimPrefix(v.ID, "i-")),
			OwnerId:       aws.String(ownerID),
			Instances:     []ec2types.Instance{inst},
		})
	}
	return out, nil
}

func (h *Handler) describeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput) (*ec2.DescribeSubnetsOutput, error) {
	subs, err := h.cfg.Cloud.DescribeSubnets(ctx, in.SubnetIds, filters(in.Filters))
	if err != nil {
		return nil, err
	}
	subs, next, err := page(subs, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeSubnetsOutput{Subnets: []ec2types.Subnet{}, NextToken: next}
	for _, s := range subs {
		out.Subnets = append(out.Subnets, ec2types.Subnet{
			SubnetId: aws.String(s.ID), VpcId: aws.String(s.VPCID), AvailabilityZone: aws.String(s.Zone),
			AvailabilityZoneId: aws.String(s.Zone + "-az"), CidrBlock: aws.String(s.CIDR),
			State: ec2types.SubnetStateAvailable, OwnerId: aws.String(ownerID), Tags: ec2Tags(s.Tags),
			AvailableIpAddressCount: aws.Int32(4000), MapPublicIpOnLaunch: aws.Bool(false),
		})
	}
	return out, nil
}

func (h *Handler) describeVpcs(ctx context.Context, in *ec2.DescribeVpcsInput) (*ec2.DescribeVpcsOutput, error) {
	vpcs, err := h.cfg.Cloud.DescribeVPCs(ctx, in.VpcIds, filters(in.Filters))
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeVpcsOutput{Vpcs: []ec2types.Vpc{}}
	for _, v := range vpcs {
		out.Vpcs = append(out.Vpcs, ec2types.Vpc{VpcId: aws.String(v.VPCID), CidrBlock: aws.String(v.CIDR),
			State: ec2types.VpcStateAvailable, OwnerId: aws.String(ownerID), IsDefault: aws.Bool(false),
			Tags: ec2Tags(map[string]string{h.cfg.Cloud.ClusterTagKey(): "owned"})})
	}
	return out, nil
}

func (h *Handler) describeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput) (*ec2.DescribeAvailabilityZonesOutput, error) {
	zones, err := h.cfg.Cloud.DescribeAvailabilityZones(ctx, in.ZoneNames)
	if err != nil {
		return nil, err
	}
	region := h.cfg.Cloud.Config().Region
	out := &ec2.DescribeAvailabilityZonesOutput{AvailabilityZones: []ec2types.AvailabilityZone{}}
	for _, z := range zones {
		// ZoneIds narrows the answer as ZoneNames does
		// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html).
		// The AWS Load Balancer Controller asks by ID and panics when
		// more zones come back than it asked for
		// (pkg/networking/az_info_provider.go, computeAZIDsWithoutAZInfo).
		if len(in.ZoneIds) > 0 && !slices.Contains(in.ZoneIds, z+"-az") {
			continue
		}
		out.AvailabilityZones = append(out.AvailabilityZones, ec2types.AvailabilityZone{ZoneName: aws.String(z), ZoneId: aws.String(z + "-az"),
			RegionName: aws.String(region), State: ec2types.AvailabilityZoneStateAvailable, ZoneType: aws.String("availability-zone")})
	}
	return out, nil
}

func (h *Handler) describeRouteTables(ctx context.Context, in *ec2.DescribeRouteTablesInput) (*ec2.DescribeRouteTablesOutput, error) {
	rts, err := h.cfg.Cloud.DescribeRouteTablesAWS(ctx, in.RouteTableIds, filters(in.Filters))
	if err != nil {
		return nil, err
	}
	rts, next, err := page(rts, in.MaxResults, in.NextToken, 5, 100)
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeRouteTablesOutput{RouteTables: []ec2types.RouteTable{}, NextToken: next}
	for _, rt := range rts {
		t := ec2types.RouteTable{RouteTableId: aws.String(rt.ID), VpcId: aws.String(rt.VPCID), OwnerId: aws.String(ownerID), Tags: ec2Tags(rt.Tags),
			Associations: []ec2types.RouteTableAssociation{{Main: aws.Bool(true), RouteTableId: aws.String(rt.ID),
				RouteTableAssociationId: aws.String("rtbassoc-" + strings.TrimPrefix(rt.ID, "rtb-"))}}}
		for _, r := range rt.Routes {
			route := ec2types.Route{DestinationCidrBlock: aws.String(r.DestinationCIDR), State: ec2types.RouteState(r.State), Origin: ec2types.RouteOrigin(r.Origin)}
			if r.GatewayID != "" {
				route.GatewayId = aws.String(r.GatewayID)
			}
			if r.InstanceID != "" {
				route.InstanceId = aws.String(r.InstanceID)
				route.InstanceOwnerId = aws.String(ownerID)
				route.NetworkInterfaceId = aws.String("eni-" + strings.TrimPrefix(r.InstanceID, "i-"))
			}
			t.Routes = append(t.Routes, route)
		}
		out.RouteTables = append(out.RouteTables, t)
	}
	return out, nil
}

func (h *Handler) createRoute(ctx context.Context, in *ec2.CreateRouteInput) (*ec2.CreateRouteOutput, error) {
	if err := h.cfg.Cloud.CheckRouteTable(aws.ToString(in.RouteTableId)); err != nil {
		return nil, err
	}
	if in.InstanceId == nil {
		return nil, &apiError{400, "InvalidParameterCombination", "The lab's route table takes routes to instances only (InstanceId)"}
	}
	if err := h.cfg.Cloud.CreateRoute(ctx, aws.ToString(in.DestinationCidrBlock), aws.ToString(in.InstanceId)); err != nil {
		return nil, err
	}
	return &ec2.CreateRouteOutput{Return: aws.Bool(true)}, nil
}

func (h *Handler) deleteRoute(ctx context.Context, in *ec2.DeleteRouteInput) (*ec2.DeleteRouteOutput, error) {
	if err := h.cfg.Cloud.CheckRouteTable(aws.ToString(in.RouteTableId)); err != nil {
		return nil, err
	}
	if err := h.cfg.Cloud.DeleteRoute(ctx, aws.ToString(in.DestinationCidrBlock)); err != nil {
		return nil, err
	}
	return &ec2.DeleteRouteOutput{}, nil
}

func (h *Handler) modifyInstanceAttribute(ctx context.Context, in *ec2.ModifyInstanceAttributeInput) (*ec2.ModifyInstanceAttributeOutput, error) {
	if in.SourceDestCheck == nil || in.SourceDestCheck.Value == nil {
		return nil, &apiError{400, "InvalidParameterCombination", "The lab models the SourceDestCheck attribute only"}
	}
	if err := h.cfg.Cloud.ModifySourceDestCheck(ctx, aws.ToString(in.InstanceId), *in.SourceDestCheck.Value); err != nil {
		return nil, err
	}
	return &ec2.ModifyInstanceAttributeOutput{}, nil
}

// toIPPermissions groups a group's rules, stored one source each, by
// protocol and ports, as EC2 answers them; each source keeps its
// description.
func toIPPermissions(g cloud.SecurityGroup) []ec2types.IpPermission {
	out := []ec2types.IpPermission{}
	index := map[string]int{}
	for _, p := range g.Ingress {
		key := fmt.Sprintf("%s/%d/%d", p.Protocol, p.FromPort, p.ToPort)
		i, ok := index[key]
		if !ok {
			ip := ec2types.IpPermission{IpProtocol: aws.String(p.Protocol), IpRanges: []ec2types.IpRange{}, UserIdGroupPairs: []ec2types.UserIdGroupPair{},
				Ipv6Ranges: []ec2types.Ipv6Range{}, PrefixListIds: []ec2types.PrefixListId{}}
			if p.Protocol != "-1" {
				ip.FromPort, ip.ToPort = aws.Int32(p.FromPort), aws.Int32(p.ToPort)
			}
			i = len(out)
			index[key] = i
			out = append(out, ip)
		}
		desc := optString(p.Description)
		for _, c := range p.CIDRs {
			out[i].IpRanges = append(out[i].IpRanges, ec2types.IpRange{CidrIp: aws.String(c), Description: desc})
		}
		for _, id := range p.GroupIDs {
			out[i].UserIdGroupPairs = append(out[i].UserIdGroupPairs, ec2types.UserIdGroupPair{GroupId: aws.String(id), UserId: aws.String(ownerID), Description: desc})
		}
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// fromIPPermissions makes one cloud rule per source, each with its own
// description.
func fromIPPermissions(ps []ec2types.IpPermission) []cloud.IPPermission {
	out := make([]cloud.IPPermission, 0, len(ps))
	for _, p := range ps {
		base := cloud.IPPermission{Protocol: aws.ToString(p.IpProtocol), FromPort: aws.ToInt32(p.FromPort), ToPort: aws.ToInt32(p.ToPort)}
		if len(p.IpRanges) == 0 && len(p.UserIdGroupPairs) == 0 {
			out = append(out, base) // refused by the cloud: no source
		}
		for _, r := range p.IpRanges {
			cp := base
			cp.CIDRs, cp.Description = []string{aws.ToString(r.CidrIp)}, aws.ToString(r.Description)
			out = append(out, cp)
		}
		for _, g := range p.UserIdGroupPairs {
			cp := base
			cp.GroupIDs, cp.Description = []string{aws.ToString(g.GroupId)}, aws.ToString(g.Description)
			out = append(out, cp)
		}
	}
	return out
}

func (h *Handler) describeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput) (*ec2.DescribeSecurityGroupsOutput, error) {
	fs := filters(in.Filters)
	if len(in.GroupNames) > 0 {
		fs = append(fs, cloud.Filter{Name: "group-name", Values: in.GroupNames})
	}
	groups, err := h.cfg.Cloud.DescribeSecurityGroupsAWS(ctx, in.GroupIds, fs)
	if err != nil {
		return nil, err
	}
	groups, next, err := page(groups, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeSecurityGroupsOutput{SecurityGroups: []ec2types.SecurityGroup{}, NextToken: next}
	for _, g := range groups {
		out.SecurityGroups = append(out.SecurityGroups, ec2types.SecurityGroup{
			GroupId: aws.String(g.ID), GroupName: aws.String(g.Name), Description: aws.String(g.Description),
			VpcId: aws.String(g.VPCID), OwnerId: aws.String(ownerID), IpPermissions: toIPPermissions(g),
			IpPermissionsEgress: []ec2types.IpPermission{{IpProtocol: aws.String("-1"), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}},
			Tags:                ec2Tags(g.Tags),
		})
	}
	return out, nil
}

func (h *Handler) createSecurityGroup(ctx context.Context, in *ec2.CreateSecurityGroupInput) (*ec2.CreateSecurityGroupOutput, error) {
	tags := map[string]string{}
	for _, ts := range in.TagSpecifications {
		maps.Copy(tags, tagMap(ts.Tags))
	}
	id, err := h.cfg.Cloud.CreateSecurityGroup(ctx, aws.ToString(in.GroupName), aws.ToString(in.Description), aws.ToString(in.VpcId), tags)
	if err != nil {
		return nil, err
	}
	return &ec2.CreateSecurityGroupOutput{GroupId: aws.String(id)}, nil
}

func (h *Handler) deleteSecurityGroup(ctx context.Context, in *ec2.DeleteSecurityGroupInput) (*ec2.DeleteSecurityGroupOutput, error) {
	if err := h.cfg.Cloud.DeleteSecurityGroup(ctx, aws.ToString(in.GroupId)); err != nil {
		return nil, err
	}
	return &ec2.DeleteSecurityGroupOutput{Return: aws.Bool(true), GroupId: in.GroupId}, nil
}

func (h *Handler) authorizeSecurityGroupIngress(ctx context.Context, in *ec2.AuthorizeSecurityGroupIngressInput) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
	if err := h.cfg.Cloud.AuthorizeIngress(ctx, aws.ToString(in.GroupId), fromIPPermissions(in.IpPermissions)); err != nil {
		return nil, err
	}
	return &ec2.AuthorizeSecurityGroupIngressOutput{Return: aws.Bool(true)}, nil
}

func (h *Handler) revokeSecurityGroupIngress(ctx context.Context, in *ec2.RevokeSecurityGroupIngressInput) (*ec2.RevokeSecurityGroupIngressOutput, error) {
	if err := h.cfg.Cloud.RevokeIngress(ctx, aws.ToString(in.GroupId), fromIPPermissions(in.IpPermissions)); err != nil {
		return nil, err
	}
	return &ec2.RevokeSecurityGroupIngressOutput{Return: aws.Bool(true)}, nil
}

func (h *Handler) createTags(ctx context.Context, in *ec2.CreateTagsInput) (*ec2.CreateTagsOutput, error) {
	if err := h.cfg.Cloud.CreateTags(ctx, in.Resources, tagMap(in.Tags)); err != nil {
		return nil, err
	}
	return &ec2.CreateTagsOutput{}, nil
}

func (h *Handler) deleteTags(ctx context.Context, in *ec2.DeleteTagsInput) (*ec2.DeleteTagsOutput, error) {
	keys := make([]string, len(in.Tags))
	for i, t := range in.Tags {
		keys[i] = aws.ToString(t.Key)
	}
	if err := h.cfg.Cloud.DeleteTags(ctx, in.Resources, keys); err != nil {
		return nil, err
	}
	return &ec2.DeleteTagsOutput{}, nil
}

func (h *Handler) describeInstanceTopology(ctx context.Context, in *ec2.DescribeInstanceTopologyInput) (*ec2.DescribeInstanceTopologyOutput, error) {
	if err := h.cfg.Cloud.DescribeInstanceTopology(ctx, in.InstanceIds); err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTopologyOutput{Instances: []ec2types.InstanceTopology{}}, nil
}
