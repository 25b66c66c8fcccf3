package cloud

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// InstanceView is an instance as EC2 describes it: the lab's instance with
// its network placement, groups and attributes.
type InstanceView struct {
	Instance
	VPCID           string
	SubnetID        string
	SecurityGroups  []SecurityGroup // ID and Name only
	SourceDestCheck bool
	// PodAddresses are the secondary private IPv4 addresses on its
	// primary network interface (aws_eniaddrs.go).
	PodAddresses []SecondaryAddress
}

// DescribeInstancesAWS answers EC2 DescribeInstances: IDs must exist (one
// unknown ID fails the call), filters narrow the result.
func (c *Cloud) DescribeInstancesAWS(ctx context.Context, ids []string, filters []Filter) ([]InstanceView, error) {
	return c.DescribeInstanceViews(ctx, ActionDescribeInstances, ids, filters)
}

// instanceFilters are the DescribeInstances filters the model can answer
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html),
// beside tag:<key> and tag-key.
var instanceFilters = []string{"instance-id", "private-dns-name", "instance-state-name", "instance-state-code",
	"availability-zone", "vpc-id", "subnet-id", "private-ip-address", "instance-type", "network-interface.addresses.private-ip-address",
	"ip-address", "dns-name", "instance.group-id", "instance.group-name", "group-id", "group-name", "architecture",
	"image-id", "tenancy", "placement-group-name", "reservation-id", "owner-id", "source-dest-check",
	"network-interface.network-interface-id", "network-interface.subnet-id", "network-interface.vpc-id", "launch-time"}

// DescribeInstanceViews describes instances as action (DescribeInstances,
// DescribeInstanceStatus, DescribeNetworkInterfaces): the same views,
// each action's own IAM permission and call log line.
func (c *Cloud) DescribeInstanceViews(ctx context.Context, action string, ids []string, filters []Filter) ([]InstanceView, error) {
	var out []InstanceView
	req := summarizeFilters(filters)
	if len(ids) > 0 {
		req = "ids=" + summarize(ids) + " " + req
	}
	err := c.awsCall(ctx, ServiceEC2, action, req, ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var recs []*instanceRec
		if len(ids) > 0 {
			var missing []string
			for _, id := range ids {
				if rec, ok := c.instances[id]; ok {
					if !slices.Contains(recs, rec) {
						recs = append(recs, rec)
					}
				} else {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return "", errorf(ErrInstanceNotFound, "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
			}
		} else {
			recs = c.sortedInstancesLocked()
		}
		for _, rec := range recs {
			v := c.instanceViewLocked(rec)
			ok, err := matchFilters(filters, instanceFilters, c.instanceFieldsLocked(v), v.Tags)
			if err != nil {
				return "", err
			}
			if ok {
				out = append(out, v)
			}
		}
		return fmt.Sprintf("%d instances", len(out)), nil
	})
	return out, err
}

// instanceFieldsLocked are an instance's values for instanceFilters. A
// lab instance has no public address: ip-address and dns-name match
// nothing.
func (c *Cloud) instanceFieldsLocked(v InstanceView) map[string][]string {
	var gids, gnames []string
	for _, g := range v.SecurityGroups {
		gids, gnames = append(gids, g.ID), append(gnames, g.Name)
	}
	eni := "eni-" + strings.TrimPrefix(v.ID, "i-")
	f := map[string][]string{"instance-id": {v.ID}, "private-dns-name": {v.PrivateDNSName}, "instance-state-name": {string(v.State)},
		"instance-state-code": {fmt.Sprint(InstanceStateCode(v.State))},
		"availability-zone":   {v.Zone}, "vpc-id": {v.VPCID}, "subnet-id": {v.SubnetID}, "private-ip-address": {v.PrivateIP}, "instance-type": {v.InstanceType},
		"network-interface.addresses.private-ip-address": append([]string{v.PrivateIP}, secondaryIPs(v.PodAddresses)...),
		"instance.group-id": gids, "instance.group-name": gnames, "group-id": gids, "group-name": gnames,
		"architecture": {"x86_64"}, "image-id": {ImageID}, "tenancy": {"default"}, "reservation-id": {"r-" + strings.TrimPrefix(v.ID, "i-")},
		"owner-id": {"000000000000"}, "source-dest-check": {fmt.Sprint(v.SourceDestCheck)},
		"network-interface.network-interface-id": {eni}, "network-interface.subnet-id": {v.SubnetID}, "network-interface.vpc-id": {v.VPCID},
		"launch-time": {v.LaunchTime.UTC().Format("2006-01-02T15:04:05.000Z")}}
	if v.State == InstanceTerminated {
		for _, k := range []string{"network-interface.addresses.private-ip-address", "network-interface.network-interface-id", "network-interface.subnet-id", "network-interface.vpc-id"} {
			delete(f, k)
		}
	}
	return f
}

func (c *Cloud) instanceViewLocked(rec *instanceRec) InstanceView {
	v := InstanceView{Instance: rec.clone(), VPCID: c.aws.net.VPCID, SourceDestCheck: true, PodAddresses: c.podAddrsLocked(rec)}
	if s, ok := c.aws.net.SubnetOf(rec.Zone); ok {
		v.SubnetID = s.ID
	}
	if sdc, ok := c.aws.sourceDestCheck[rec.ID]; ok {
		v.SourceDestCheck = sdc
	}
	if g := c.aws.groups[c.aws.net.NodeGroupID]; g != nil {
		v.SecurityGroups = []SecurityGroup{{ID: g.ID, Name: g.Name}}
	}
	// Every lab instance is a node of the one cluster.
	v.Tags = cloneTags(v.Tags)
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	v.Tags[c.ClusterTagKey()] = "owned"
	if _, ok := v.Tags["Name"]; !ok {
		v.Tags["Name"] = v.PrivateDNSName
	}
	return v
}

// ImageID is the AMI every lab instance runs.
const ImageID = "ami-0ccm1ab0000000000"

// InstanceStateCode is EC2's code of a state
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceState.html).
func InstanceStateCode(s InstanceState) int32 {
	switch s {
	case InstanceRunning:
		return 16
	case InstanceTerminated:
		return 48
	case InstanceStopping:
		return 64
	case InstanceStopped:
		return 80
	case "shutting-down":
		return 32
	}
	return 0
}

// DescribeInstanceTopology answers that no instance has a network
// topology: the lab's instance types are not the HPC and accelerator types
// EC2 reports one for, and the provider then leaves the topology labels
// off, as it does on AWS.
func (c *Cloud) DescribeInstanceTopology(ctx context.Context, ids []string) error {
	return c.awsCall(ctx, ServiceEC2, ActionDescribeInstanceTopology, "ids="+summarize(ids), ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, id := range ids {
			if _, ok := c.instances[id]; !ok {
				return "", errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", id)
			}
		}
		return "0 topologies", nil
	})
}

// ModifySourceDestCheck turns an instance's source/destination check on or
// off: the Route controller turns it off so the node may forward Pod
// traffic.
func (c *Cloud) ModifySourceDestCheck(ctx context.Context, id string, on bool) error {
	return c.awsCall(ctx, ServiceEC2, ActionModifyInstanceAttribute, fmt.Sprintf("id=%s sourceDestCheck=%t", id, on), []string{id}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.instances[id]; !ok {
			return "", errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", id)
		}
		c.aws.sourceDestCheck[id] = on
		emit(EventInstance, id)
		return fmt.Sprintf("%s sourceDestCheck=%t", id, on), nil
	})
}
