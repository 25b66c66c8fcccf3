package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// AWSNetwork is the VPC layout: fixed for the life of a data dir.
type AWSNetwork struct {
	VPCID             string      `json:"vpcID"`
	CIDR              string      `json:"cidr"`
	InternetGatewayID string      `json:"internetGatewayID"`
	RouteTableID      string      `json:"routeTableID"`
	NodeGroupID       string      `json:"nodeGroupID"` // the nodes' security group
	Subnets           []AWSSubnet `json:"subnets"`     // in zone order
}

// AWSSubnet is the one subnet of a zone, where that zone's instances live.
type AWSSubnet struct {
	ID   string `json:"id"`
	Zone string `json:"zone"`
	CIDR string `json:"cidr"`
	// Tags start as DefaultSubnetTags and change only by CreateTags and
	// DeleteTags: which subnets cloud-provider-aws puts a load balancer in
	// follows them (findSubnets, findELBSubnets), and students change them.
	Tags map[string]string `json:"tags,omitempty"`
}

// cloneSubnets copies subnets with their tags.
func cloneSubnets(in []AWSSubnet) []AWSSubnet {
	out := slices.Clone(in)
	for i := range out {
		out[i].Tags = cloneTags(out[i].Tags)
	}
	return out
}

// initAWSNetwork creates the VPC, subnets, gateway, route table and the
// nodes' security group of a fresh cloud.
func (c *Cloud) initAWSNetwork() {
	a := c.aws
	a.net = AWSNetwork{
		VPCID:             awsID("vpc"),
		CIDR:              c.net.vpc.String(),
		InternetGatewayID: awsID("igw"),
		RouteTableID:      awsID("rtb"),
	}
	for _, z := range c.cfg.Zones {
		sn := AWSSubnet{ID: awsID("subnet"), Zone: z, CIDR: c.net.subnets[z].Prefix().String()}
		sn.Tags = c.DefaultSubnetTags(sn.Zone)
		a.net.Subnets = append(a.net.Subnets, sn)
	}
	g := &SecurityGroup{
		ID:          awsID("sg"),
		Name:        c.cfg.ClusterID + "-node",
		Description: "Security group of the cluster's nodes",
		VPCID:       a.net.VPCID,
		Ingress: []IPPermission{
			{Protocol: "-1", FromPort: -1, ToPort: -1, GroupIDs: nil},
		},
		Tags: map[string]string{c.ClusterTagKey(): "owned", "Name": c.cfg.ClusterID + "-node"},
	}
	g.Ingress[0].GroupIDs = []string{g.ID} // nodes reach each other
	a.groups[g.ID] = g
	a.net.NodeGroupID = g.ID
}

// AWSNetworkInfo returns the VPC layout.
func (c *Cloud) AWSNetworkInfo() AWSNetwork {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.aws.net
	n.Subnets = cloneSubnets(n.Subnets)
	return n
}

// SubnetOf returns the subnet of a zone.
func (n AWSNetwork) SubnetOf(zone string) (AWSSubnet, bool) {
	for _, s := range n.Subnets {
		if s.Zone == zone {
			return s, true
		}
	}
	return AWSSubnet{}, false
}

// DefaultSubnetTags are a zone's subnet's tags in a fresh lab: the
// cluster's own tag and both load balancer roles, which cloud-provider-aws
// and the AWS Load Balancer Controller look for when they pick load
// balancer subnets: kubernetes.io/role/elb for internet-facing ones,
// kubernetes.io/role/internal-elb for internal ones
// (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.4/deploy/subnet_discovery).
// The lab has one subnet per zone, so it serves both roles; without the
// internal role the controller's internal NLBs (its default scheme) find
// no subnet (its subnet_resolver.go filters on the role tag first, then
// falls back to private subnets, which the lab has none of).
func (c *Cloud) DefaultSubnetTags(zone string) map[string]string {
	return map[string]string{c.ClusterTagKey(): "owned", "kubernetes.io/role/elb": "1", "kubernetes.io/role/internal-elb": "1", "Name": c.cfg.ClusterID + "-" + zone}
}

// RestoreSubnetTags puts every subnet's tags back to DefaultSubnetTags,
// outside the call log: an exercise's reset, not an API call. It reports
// whether anything changed.
func (c *Cloud) RestoreSubnetTags() bool {
	c.mu.Lock()
	changed := false
	for i, s := range c.aws.net.Subnets {
		want := c.DefaultSubnetTags(s.Zone)
		if !maps.Equal(s.Tags, want) {
			c.aws.net.Subnets[i].Tags = want
			changed = true
		}
	}
	c.mu.Unlock()
	if changed {
		c.markDirty()
		c.publish(Event{Kind: EventSubnet})
	}
	return changed
}

// EventSubnet is published when a subnet's tags change.
const EventSubnet = "subnet"

func (c *Cloud) subnetIndexLocked(id string) int {
	return slices.IndexFunc(c.aws.net.Subnets, func(s AWSSubnet) bool { return s.ID == id })
}

// DescribeVPCs lists the lab's one VPC.
func (c *Cloud) DescribeVPCs(ctx context.Context, ids []string, filters []Filter) ([]AWSNetwork, error) {
	var out []AWSNetwork
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeVpcs, summarizeFilters(filters), ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		n := c.aws.net
		for _, id := range ids {
			if id != n.VPCID {
				return "", errorf("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
			}
		}
		ok, err := matchFilters(filters, []string{"vpc-id", "cidr", "state"}, map[string][]string{"vpc-id": {n.VPCID}, "cidr": {n.CIDR}, "state": {"available"}}, nil)
		if err != nil {
			return "", err
		}
		if ok {
			n.Subnets = cloneSubnets(n.Subnets)
			out = append(out, n)
		}
		return fmt.Sprintf("%d vpcs", len(out)), nil
	})
	return out, err
}

// SubnetView is a subnet with its tags.
type SubnetView struct {
	AWSSubnet
	VPCID string
	Tags  map[string]string
}

// DescribeSubnets lists subnets by ID and filters (vpc-id, subnet-id,
// availability-zone, tag:K, tag-key).
func (c *Cloud) DescribeSubnets(ctx context.Context, ids []string, filters []Filter) ([]SubnetView, error) {
	var out []SubnetView
	req := summarizeFilters(filters)
	if len(ids) > 0 {
		req = "ids=" + summarize(ids) + " " + req
	}
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeSubnets, req, ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, id := range ids {
			if !slices.ContainsFunc(c.aws.net.Subnets, func(s AWSSubnet) bool { return s.ID == id }) {
				return "", errorf(ErrSubnetNotFound, "The subnet ID '%s' does not exist", id)
			}
		}
		for _, s := range c.aws.net.Subnets {
			if len(ids) > 0 && !slices.Contains(ids, s.ID) {
				continue
			}
			tags := cloneTags(s.Tags)
			ok, err := matchFilters(filters, []string{"vpc-id", "subnet-id", "availability-zone", "cidr-block", "state"},
				map[string][]string{"vpc-id": {c.aws.net.VPCID}, "subnet-id": {s.ID}, "availability-zone": {s.Zone}, "cidr-block": {s.CIDR}, "state": {"available"}}, tags)
			if err != nil {
				return "", err
			}
			if ok {
				out = append(out, SubnetView{AWSSubnet: s, VPCID: c.aws.net.VPCID, Tags: tags})
			}
		}
		return fmt.Sprintf("%d subnets", len(out)), nil
	})
	return out, err
}

// DescribeAvailabilityZones lists the region's zones.
func (c *Cloud) DescribeAvailabilityZones(ctx context.Context, names []string) ([]string, error) {
	var out []string
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeAvailabilityZones, "names="+summarize(names), nil, func(emitFunc) (string, error) {
		for _, z := range c.cfg.Zones {
			if len(names) == 0 || slices.Contains(names, z) {
				out = append(out, z)
			}
		}
		return fmt.Sprintf("%d zones", len(out)), nil
	})
	return out, err
}
