package awsapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// page cuts a Describe's answer to MaxResults items from NextToken, as
// EC2 pages (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Query-Requests.html#api-pagination):
// MaxResults outside the action's documented range is refused, the token
// is opaque to the caller (here the offset, encoded), and the last page
// has none. Without MaxResults everything comes in one page.
func page[T any](items []T, maxResults *int32, token *string, lo, hi int32) ([]T, *string, error) {
	start := 0
	if t := aws.ToString(token); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "ccmlab:"))
		if err != nil || err2 != nil || !strings.HasPrefix(string(b), "ccmlab:") || n < 0 || n > len(items) {
			return nil, nil, &apiError{400, "InvalidPaginationToken", fmt.Sprintf("Invalid pagination token %q", clip(t))}
		}
		start = n
	}
	if maxResults == nil {
		return items[start:], nil, nil
	}
	m := *maxResults
	if m < lo || m > hi {
		return nil, nil, &apiError{400, "InvalidParameterValue", fmt.Sprintf("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", m, lo, hi)}
	}
	end := min(start+int(m), len(items))
	var next *string
	if end < len(items) {
		next = aws.String(base64.RawURLEncoding.EncodeToString([]byte("ccmlab:" + strconv.Itoa(end))))
	}
	return items[start:end], next, nil
}

func eniID(instanceID string) string { return "eni-" + strings.TrimPrefix(instanceID, "i-") }

// describeNetworkInterfaces lists the nodes' primary interfaces: one per
// instance that is not terminated (its interface goes with it).
func (h *Handler) describeNetworkInterfaces(ctx context.Context, in *ec2.DescribeNetworkInterfacesInput) (*ec2.DescribeNetworkInterfacesOutput, error) {
	if len(in.NetworkInterfaceIds) > 0 && in.MaxResults != nil {
		return nil, &apiError{400, "InvalidParameterCombination", "The parameter NetworkInterfaceIds cannot be used with the parameter maxResults"}
	}
	views, err := h.cfg.Cloud.DescribeInstanceViews(ctx, cloud.ActionDescribeNetworkInterfaces, nil, nil)
	if err != nil {
		return nil, err
	}
	byID := map[string]cloud.InstanceView{}
	for _, v := range views {
		if v.State != cloud.InstanceTerminated {
			byID[eniID(v.ID)] = v
		}
	}
	for _, id := range in.NetworkInterfaceIds {
		if _, ok := byID[id]; !ok {
			return nil, &apiError{400, "InvalidNetworkInterfaceID.NotFound", fmt.Sprintf("The networkInterface ID '%s' does not exist", clip(id))}
		}
	}
	fs := filters(in.Filters)
	var out []ec2types.NetworkInterface
	for _, v := range views {
		id := eniID(v.ID)
		if _, ok := byID[id]; !ok || len(in.NetworkInterfaceIds) > 0 && !slices.Contains(in.NetworkInterfaceIds, id) {
			continue
		}
		var gids, gnames []string
		groups := make([]ec2types.GroupIdentifier, len(v.SecurityGroups))
		for i, g := range v.SecurityGroups {
			groups[i] = ec2types.GroupIdentifier{GroupId: aws.String(g.ID), GroupName: aws.String(g.Name)}
			gids, gnames = append(gids, g.ID), append(gnames, g.Name)
		}
		// Each address is one value: private-ip-address is "the private
		// IPv4 address or addresses of the network interface", and
		// addresses.primary matches an interface with a secondary address
		// on false as well.
		all, primary := []string{v.PrivateIP}, []string{"true"}
		for _, a := range v.PodAddresses {
			all = append(all, a.IP)
		}
		if len(v.PodAddresses) > 0 {
			primary = append(primary, "false")
		}
		// The documented filters the model can answer
		// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeNetworkInterfaces.html).
		ok, err := cloud.MatchFilters(fs, map[string][]string{
			"network-interface-id": {id}, "attachment.instance-id": {v.ID}, "attachment.instance-owner-id": {ownerID},
			"attachment.device-index": {"0"}, "attachment.status": {"attached"}, "attachment.attachment-id": {"eni-attach-" + strings.TrimPrefix(v.ID, "i-")},
			"attachment.delete-on-termination": {"true"}, "availability-zone": {v.Zone}, "group-id": gids, "group-name": gnames,
			"interface-type": {"interface"}, "owner-id": {ownerID}, "private-ip-address": all,
			"addresses.private-ip-address": all, "addresses.primary": primary, "private-dns-name": {v.PrivateDNSName},
			"requester-managed": {"false"}, "source-dest-check": {strconv.FormatBool(v.SourceDestCheck)}, "status": {"in-use"},
			"subnet-id": {v.SubnetID}, "vpc-id": {v.VPCID}, "description": {""},
		}, nil)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		out = append(out, ec2types.NetworkInterface{
			NetworkInterfaceId: aws.String(id),
			Attachment: &ec2types.NetworkInterfaceAttachment{AttachmentId: aws.String("eni-attach-" + strings.TrimPrefix(v.ID, "i-")),
				DeviceIndex: aws.Int32(0), InstanceId: aws.String(v.ID), InstanceOwnerId: aws.String(ownerID),
				Status: ec2types.AttachmentStatusAttached, DeleteOnTermination: aws.Bool(true), NetworkCardIndex: aws.Int32(0)},
			AvailabilityZone: aws.String(v.Zone), Groups: groups, InterfaceType: ec2types.NetworkInterfaceTypeInterface,
			OwnerId: aws.String(ownerID), PrivateDnsName: aws.String(v.PrivateDNSName), PrivateIpAddress: aws.String(v.PrivateIP),
			PrivateIpAddresses: eniAddresses(v),
			RequesterManaged:   aws.Bool(false), SourceDestCheck: aws.Bool(v.SourceDestCheck), Status: ec2types.NetworkInterfaceStatusInUse,
			SubnetId: aws.String(v.SubnetID), VpcId: aws.String(v.VPCID), Description: aws.String(""),
			TagSet: []ec2types.Tag{}, Ipv6Addresses: []ec2types.NetworkInterfaceIpv6Address{},
		})
	}
	out, next, err := page(out, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []ec2types.NetworkInterface{}
	}
	return &ec2.DescribeNetworkInterfacesOutput{NetworkInterfaces: out, NextToken: next}, nil
}

// describeInstanceStatus answers the running instances (all of them with
// IncludeAllInstances), each passing both status checks: the lab's
// instances have no impaired hardware.
func (h *Handler) describeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput) (*ec2.DescribeInstanceStatusOutput, error) {
	if len(in.InstanceIds) > 0 && in.MaxResults != nil {
		return nil, &apiError{400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults"}
	}
	var statusFilters, instFilters []cloud.Filter
	for _, f := range filters(in.Filters) {
		switch f.Name {
		case "instance-status.status", "instance-status.reachability", "system-status.status", "system-status.reachability":
			statusFilters = append(statusFilters, f)
		default:
			instFilters = append(instFilters, f)
		}
	}
	views, err := h.cfg.Cloud.DescribeInstanceViews(ctx, cloud.ActionDescribeInstanceStatus, in.InstanceIds, instFilters)
	if err != nil {
		return nil, err
	}
	out := []ec2types.InstanceStatus{}
	for _, v := range views {
		if v.State != cloud.InstanceRunning && !aws.ToBool(in.IncludeAllInstances) {
			continue
		}
		status, reach := ec2types.SummaryStatusOk, ec2types.StatusTypePassed
		if v.State != cloud.InstanceRunning {
			status, reach = ec2types.SummaryStatusNotApplicable, ""
		}
		ok, err := cloud.MatchFilters(statusFilters, map[string][]string{
			"instance-status.status": {string(status)}, "system-status.status": {string(status)},
			"instance-status.reachability": {string(reach)}, "system-status.reachability": {string(reach)}}, nil)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		summary := func() *ec2types.InstanceStatusSummary {
			s := &ec2types.InstanceStatusSummary{Status: status, Details: []ec2types.InstanceStatusDetails{}}
			if reach != "" {
				s.Details = append(s.Details, ec2types.InstanceStatusDetails{Name: ec2types.StatusNameReachability, Status: reach})
			}
			return s
		}
		out = append(out, ec2types.InstanceStatus{InstanceId: aws.String(v.ID), AvailabilityZone: aws.String(v.Zone),
			InstanceState: instanceState(v.State), InstanceStatus: summary(), SystemStatus: summary(), Events: []ec2types.InstanceStatusEvent{}})
	}
	out, next, err := page(out, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceStatusOutput{InstanceStatuses: out, NextToken: next}, nil
}

// describeRegions answers the lab's one region.
func (h *Handler) describeRegions(ctx context.Context, in *ec2.DescribeRegionsInput) (*ec2.DescribeRegionsOutput, error) {
	region := h.cfg.Cloud.Config().Region
	if err := h.cfg.Cloud.Read(ctx, cloud.ActionDescribeRegions, "regions="+strings.Join(in.RegionNames, ",")); err != nil {
		return nil, err
	}
	out := []ec2types.Region{}
	for _, n := range in.RegionNames {
		if n != region {
			return nil, &apiError{400, "InvalidParameterValue", fmt.Sprintf("Invalid region: %s (the lab has one region, %s)", clip(n), region)}
		}
	}
	endpoint := "ec2." + region + ".amazonaws.com"
	ok, err := cloud.MatchFilters(filters(in.Filters), map[string][]string{"region-name": {region}, "endpoint": {endpoint}, "opt-in-status": {"opt-in-not-required"}}, nil)
	if err != nil {
		return nil, err
	}
	if ok {
		out = append(out, ec2types.Region{RegionName: aws.String(region), Endpoint: aws.String(endpoint), OptInStatus: aws.String("opt-in-not-required")})
	}
	return &ec2.DescribeRegionsOutput{Regions: out}, nil
}

// describeTags lists the tags of the EC2 resources the lab has.
func (h *Handler) describeTags(ctx context.Context, in *ec2.DescribeTagsInput) (*ec2.DescribeTagsOutput, error) {
	res, err := h.cfg.Cloud.TaggedResources(ctx)
	if err != nil {
		return nil, err
	}
	fs := filters(in.Filters)
	out := []ec2types.TagDescription{}
	for _, r := range res {
		for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
			// The documented filters
			// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeTags.html).
			ok, err := cloud.MatchFilters(fs, map[string][]string{"key": {k}, "value": {r.Tags[k]}, "resource-id": {r.ID}, "resource-type": {r.Type}}, nil)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, ec2types.TagDescription{Key: aws.String(k), Value: aws.String(r.Tags[k]), ResourceId: aws.String(r.ID), ResourceType: ec2types.ResourceType(r.Type)})
			}
		}
	}
	out, next, err := page(out, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeTagsOutput{Tags: out, NextToken: next}, nil
}

// stateChange runs one of the page's instance buttons (the cloud's
// StopInstance, StartInstance, TerminateInstance, as server/api_cloud.go
// does) for each instance. Every ID must exist before any changes, as on
// EC2. The answer's CurrentState is the transition EC2 reports at once
// (stopping, pending, shutting-down); the lab's model reaches the end
// state within the call, so a describe right after shows it.
func (h *Handler) stateChange(ctx context.Context, ids []string, during cloud.InstanceState,
	fn func(context.Context, string) (cloud.Instance, error)) ([]ec2types.InstanceStateChange, error) {
	if len(ids) == 0 {
		return nil, &apiError{400, "MissingParameter", "The request must contain the parameter InstanceId"}
	}
	before := map[string]cloud.InstanceState{}
	for _, in := range h.cfg.Cloud.Instances() {
		before[in.ID] = in.State
	}
	var missing []string
	for _, id := range ids {
		if _, ok := before[id]; !ok {
			missing = append(missing, clip(id))
		}
	}
	if len(missing) > 0 {
		return nil, &apiError{400, cloud.ErrInstanceNotFound, fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(missing, ", "))}
	}
	out := []ec2types.InstanceStateChange{}
	for _, id := range ids {
		prev := before[id]
		inst, err := fn(ctx, id)
		if err != nil {
			return nil, err
		}
		cur := during
		if inst.State == prev {
			cur = prev // already there: EC2 answers the state unchanged
		}
		out = append(out, ec2types.InstanceStateChange{InstanceId: aws.String(id), PreviousState: instanceState(prev), CurrentState: instanceState(cur)})
	}
	return out, nil
}

func (h *Handler) terminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput) (*ec2.TerminateInstancesOutput, error) {
	ch, err := h.stateChange(ctx, in.InstanceIds, "shutting-down", h.cfg.Cloud.TerminateInstance)
	if err != nil {
		return nil, err
	}
	return &ec2.TerminateInstancesOutput{TerminatingInstances: ch}, nil
}

func (h *Handler) stopInstances(ctx context.Context, in *ec2.StopInstancesInput) (*ec2.StopInstancesOutput, error) {
	ch, err := h.stateChange(ctx, in.InstanceIds, cloud.InstanceStopping, h.cfg.Cloud.StopInstance)
	if err != nil {
		return nil, err
	}
	return &ec2.StopInstancesOutput{StoppingInstances: ch}, nil
}

func (h *Handler) startInstances(ctx context.Context, in *ec2.StartInstancesInput) (*ec2.StartInstancesOutput, error) {
	ch, err := h.stateChange(ctx, in.InstanceIds, cloud.InstancePending, h.cfg.Cloud.StartInstance)
	if err != nil {
		return nil, err
	}
	return &ec2.StartInstancesOutput{StartingInstances: ch}, nil
}

// eniAddresses are an interface's private IPv4 addresses as
// DescribeNetworkInterfaces lists them: the primary first, then the
// secondary ones (on the vpc-cni profile, its Pods'), each with its own
// private DNS name and Primary false
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_NetworkInterfacePrivateIpAddress.html).
func eniAddresses(v cloud.InstanceView) []ec2types.NetworkInterfacePrivateIpAddress {
	out := []ec2types.NetworkInterfacePrivateIpAddress{{PrivateIpAddress: aws.String(v.PrivateIP), PrivateDnsName: aws.String(v.PrivateDNSName), Primary: aws.Bool(true)}}
	for _, a := range v.PodAddresses {
		out = append(out, ec2types.NetworkInterfacePrivateIpAddress{PrivateIpAddress: aws.String(a.IP), PrivateDnsName: aws.String(a.PrivateDNSName), Primary: aws.Bool(false)})
	}
	return out
}

// instanceAddresses are the same in DescribeInstances' shape
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstancePrivateIpAddress.html).
func instanceAddresses(v cloud.InstanceView) []ec2types.InstancePrivateIpAddress {
	out := []ec2types.InstancePrivateIpAddress{{PrivateIpAddress: aws.String(v.PrivateIP), PrivateDnsName: aws.String(v.PrivateDNSName), Primary: aws.Bool(true)}}
	for _, a := range v.PodAddresses {
		out = append(out, ec2types.InstancePrivateIpAddress{PrivateIpAddress: aws.String(a.IP), PrivateDnsName: aws.String(a.PrivateDNSName), Primary: aws.Bool(false)})
	}
	return out
}
