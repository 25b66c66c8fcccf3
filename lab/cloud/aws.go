package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The AWS model: the resources behind the AWS wire API (lab/awsapi) that
// the upstream k8s.io/cloud-provider-aws reads and writes. Instances and
// the Route controller's routes are the ones the rest of the lab uses; the
// VPC, subnets, internet gateway, route table, security groups, Classic
// ELBs and NLBs live here. Every action runs through the same call
// pipeline as the lab's own API (IAM deny, rate limit, latency, injected
// failures, call log), tagged with its AWS service.

// AWS services, as in a SigV4 credential scope and the call log.
const (
	ServiceEC2   = "ec2"
	ServiceELB   = "elasticloadbalancing"
	ServiceELBv2 = "elasticloadbalancingv2"
)

// AWS error codes the wire API answers with, beyond those in errors.go.
const (
	ErrUnauthorizedOperation = "UnauthorizedOperation" // EC2's AccessDenied
	ErrRequestLimitExceeded  = "RequestLimitExceeded"  // EC2's Throttling
	ErrGroupNotFound         = "InvalidGroup.NotFound"
	ErrGroupDuplicate        = "InvalidGroup.Duplicate"
	ErrPermissionDuplicate   = "InvalidPermission.Duplicate"
	ErrPermissionNotFound    = "InvalidPermission.NotFound"
	ErrDependencyViolation   = "DependencyViolation"
	ErrSubnetNotFound        = "InvalidSubnetID.NotFound"
	ErrRouteTableNotFound    = "InvalidRouteTableID.NotFound"
	ErrInvalidFilter         = "InvalidParameterValue"
	ErrListenerNotFound      = "ListenerNotFound"
	ErrRuleNotFound          = "RuleNotFound"
	ErrTargetGroupNotFound   = "TargetGroupNotFound"
	ErrDuplicateListener     = "DuplicateListener"
	ErrDuplicateTargetGroup  = "DuplicateTargetGroupName"
	ErrResourceInUse         = "ResourceInUse"
	ErrInvalidConfiguration  = "InvalidConfigurationRequest"
)

// AWS actions beyond the lab's own (faults.go); names shared by ELB and
// ELBv2 (CreateLoadBalancer, ...) are one action for Deny and FailNext.
const (
	ActionDescribeVpcs                      = "DescribeVpcs"
	ActionDescribeSubnets                   = "DescribeSubnets"
	ActionDescribeAvailabilityZones         = "DescribeAvailabilityZones"
	ActionDescribeInternetGateways          = "DescribeInternetGateways"
	ActionDescribeSecurityGroups            = "DescribeSecurityGroups"
	ActionCreateSecurityGroup               = "CreateSecurityGroup"
	ActionDeleteSecurityGroup               = "DeleteSecurityGroup"
	ActionAuthorizeSecurityGroupIngress     = "AuthorizeSecurityGroupIngress"
	ActionRevokeSecurityGroupIngress        = "RevokeSecurityGroupIngress"
	ActionCreateTags                        = "CreateTags"
	ActionDeleteTags                        = "DeleteTags"
	ActionModifyInstanceAttribute           = "ModifyInstanceAttribute"
	ActionCreateLoadBalancerListeners       = "CreateLoadBalancerListeners"
	ActionDeleteLoadBalancerListeners       = "DeleteLoadBalancerListeners"
	ActionRegisterInstancesWithLB           = "RegisterInstancesWithLoadBalancer"
	ActionDeregisterInstancesFromLB         = "DeregisterInstancesFromLoadBalancer"
	ActionDescribeLoadBalancerAttributes    = "DescribeLoadBalancerAttributes"
	ActionModifyLoadBalancerAttributes      = "ModifyLoadBalancerAttributes"
	ActionApplySecurityGroupsToLB           = "ApplySecurityGroupsToLoadBalancer"
	ActionAttachLoadBalancerToSubnets       = "AttachLoadBalancerToSubnets"
	ActionDetachLoadBalancerFromSubnets     = "DetachLoadBalancerFromSubnets"
	ActionAddTags                           = "AddTags"
	ActionDescribeTags                      = "DescribeTags"
	ActionCreateTargetGroup                 = "CreateTargetGroup"
	ActionDescribeTargetGroups              = "DescribeTargetGroups"
	ActionModifyTargetGroup                 = "ModifyTargetGroup"
	ActionDeleteTargetGroup                 = "DeleteTargetGroup"
	ActionDescribeTargetHealth              = "DescribeTargetHealth"
	ActionCreateListener                    = "CreateListener"
	ActionDescribeListeners                 = "DescribeListeners"
	ActionModifyListener                    = "ModifyListener"
	ActionDeleteListener                    = "DeleteListener"
	ActionDescribeListenerAttributes        = "DescribeListenerAttributes"
	ActionDescribeRules                     = "DescribeRules"
	ActionDescribeTargetGroupAttributes     = "DescribeTargetGroupAttributes"
	ActionModifyTargetGroupAttributes       = "ModifyTargetGroupAttributes"
	ActionDescribeLoadBalancerPolicies      = "DescribeLoadBalancerPolicies"
	ActionDescribeInstanceHealth            = "DescribeInstanceHealth"
	ActionDescribeNetworkInterfaces         = "DescribeNetworkInterfaces"
	ActionDescribeInstanceTopology          = "DescribeInstanceTopology"
	ActionSetLoadBalancerPoliciesOfListener = "SetLoadBalancerPoliciesOfListener"
	ActionCreateLoadBalancerPolicy          = "CreateLoadBalancerPolicy"
	ActionSetBackendPolicies                = "SetLoadBalancerPoliciesForBackendServer"
	ActionDescribeInstanceStatus            = "DescribeInstanceStatus"
	ActionDescribeRegions                   = "DescribeRegions"
)

var awsActions = []string{
	ActionDescribeVpcs, ActionDescribeSubnets, ActionDescribeAvailabilityZones,
	ActionDescribeInternetGateways, ActionDescribeSecurityGroups,
	ActionCreateSecurityGroup, ActionDeleteSecurityGroup,
	ActionAuthorizeSecurityGroupIngress, ActionRevokeSecurityGroupIngress,
	ActionCreateTags, ActionDeleteTags, ActionModifyInstanceAttribute,
	ActionCreateLoadBalancerListeners, ActionDeleteLoadBalancerListeners,
	ActionRegisterInstancesWithLB, ActionDeregisterInstancesFromLB,
	ActionDescribeLoadBalancerAttributes, ActionModifyLoadBalancerAttributes,
	ActionApplySecurityGroupsToLB, ActionAttachLoadBalancerToSubnets,
	ActionDetachLoadBalancerFromSubnets, ActionAddTags, ActionDescribeTags,
	ActionCreateTargetGroup, ActionDescribeTargetGroups, ActionModifyTargetGroup,
	ActionDeleteTargetGroup, ActionDescribeTargetHealth, ActionCreateListener,
	ActionDescribeListeners, ActionModifyListener, ActionDeleteListener,
	ActionDescribeTargetGroupAttributes, ActionModifyTargetGroupAttributes,
	ActionDescribeLoadBalancerPolicies, ActionDescribeInstanceHealth,
	ActionDescribeNetworkInterfaces, ActionSetLoadBalancerPoliciesOfListener,
	ActionDescribeInstanceTopology, ActionCreateLoadBalancerPolicy, ActionSetBackendPolicies,
	ActionDescribeInstanceStatus, ActionDescribeRegions,
	ActionDescribeListenerAttributes, ActionDescribeRules,
}

// AWSActions returns the AWS wire API's actions that are not also lab
// actions (Actions); Faults.Deny and FailNext accept both.
func AWSActions() []string {
	a := slices.Clone(awsActions)
	slices.Sort(a)
	return a
}

type serviceKey struct{}

// WithService records which AWS API a call came through; the call log
// shows it and IAM and throttling errors take that service's codes.
func WithService(ctx context.Context, service string) context.Context {
	return context.WithValue(ctx, serviceKey{}, service)
}

// ServiceFrom returns the service set by WithService, or "".
func ServiceFrom(ctx context.Context) string {
	s, _ := ctx.Value(serviceKey{}).(string)
	return s
}

// ClusterTagKey is the tag the AWS provider looks for on the resources of
// its cluster; the value is "owned" or "shared".
func (c *Cloud) ClusterTagKey() string { return "kubernetes.io/cluster/" + c.cfg.ClusterID }

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

// IPPermission is one ingress rule of a security group: a protocol ("tcp",
// "udp", "icmp" or "-1" for all), a port range and its sources.
type IPPermission struct {
	Protocol string   `json:"protocol"`
	FromPort int32    `json:"fromPort"`
	ToPort   int32    `json:"toPort"`
	CIDRs    []string `json:"cidrs,omitempty"`
	GroupIDs []string `json:"groupIDs,omitempty"`
	// Description is the rule's (IpRanges[].Description or
	// UserIdGroupPairs[].Description on the wire). A stored rule has one
	// source, so one description; it does not tell two rules apart, as on
	// AWS, but the upstream provider finds its NLB rules by it
	// (IPPermissionMatchDesc in cloud-provider-aws's
	// sets_ippermissions.go), so dropping it leaks them.
	Description string `json:"description,omitempty"`
}

// SecurityGroup is an EC2 security group of the lab's VPC.
type SecurityGroup struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	VPCID       string            `json:"vpcID"`
	Ingress     []IPPermission    `json:"ingress"`
	Tags        map[string]string `json:"tags,omitempty"`
}

func (g *SecurityGroup) clone() SecurityGroup {
	out := *g
	out.Ingress = make([]IPPermission, len(g.Ingress))
	for i, p := range g.Ingress {
		p.CIDRs = slices.Clone(p.CIDRs)
		p.GroupIDs = slices.Clone(p.GroupIDs)
		out.Ingress[i] = p
	}
	out.Tags = cloneTags(g.Tags)
	return out
}

// awsState holds the AWS model's resources; it is guarded by Cloud.mu like
// the rest of the state.
type awsState struct {
	net    AWSNetwork
	groups map[string]*SecurityGroup // by ID
	elbs   map[string]*ClassicELB    // by name
	nlbs   map[string]*NLB           // by ARN
	tgs    map[string]*TargetGroup   // by ARN
	lsns   map[string]*NLBListener   // by ARN
	// sourceDestCheck is false for instances the Route controller routes
	// Pod CIDRs to (ModifyInstanceAttribute); absent means true.
	sourceDestCheck map[string]bool
	// instanceTags are tags added by CreateTags to instances, merged over
	// Instance.Tags.
	seq uint64 // for ARNs and DNS digits that must not collide
	// health is the data plane's finding per load balancer view name and
	// "id:port" (aws_views.go); not persisted.
	health map[string]map[string]healthRec
}

func newAWSState() *awsState {
	return &awsState{
		groups:          map[string]*SecurityGroup{},
		elbs:            map[string]*ClassicELB{},
		nlbs:            map[string]*NLB{},
		tgs:             map[string]*TargetGroup{},
		lsns:            map[string]*NLBListener{},
		sourceDestCheck: map[string]bool{},
	}
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

// awsID makes an EC2 resource ID: prefix, "-", 17 hex digits.
func awsID(prefix string) string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])[:17]
}

// awsCall is call with the service recorded.
func (c *Cloud) awsCall(ctx context.Context, service, action, request string, resources []string, fn func(emit emitFunc) (string, error)) error {
	return c.call(WithService(ctx, service), action, request, resources, fn)
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

// Filter is an EC2 filter: a name and the values any one of which matches.
type Filter struct {
	Name   string
	Values []string
}

// filterSet checks filters against a resource's fields; fields maps filter
// names to the resource's values for it ("tag:K" and "tag-key" come from
// tags). Unknown filter names are an error, as on EC2, so a typo fails
// loudly instead of matching everything.
func matchFilters(filters []Filter, known []string, fields map[string][]string, tags map[string]string) (bool, error) {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]; ok {
				have = []string{v}
			}
		case f.Name == "tag-key":
			have = slices.Collect(maps.Keys(tags))
		case slices.Contains(known, f.Name):
			have = fields[f.Name]
		default:
			return false, errorf(ErrInvalidFilter, "The filter '%s' is invalid", f.Name)
		}
		if !slices.ContainsFunc(f.Values, func(v string) bool {
			return slices.ContainsFunc(have, func(h string) bool { return wildcardMatch(v, h) })
		}) {
			return false, nil
		}
	}
	return true, nil
}

// wildcardMatch matches a filter value against a resource's: EC2 filter
// values take * (any characters) and ? (one character), and a backslash
// makes either literal
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Filtering.html).
// It runs in O(len(pattern)*len(s)) whatever the pattern, so a student's
// filter of many stars costs no more than a plain one.
func wildcardMatch(pattern, s string) bool {
	type tok struct {
		r    rune
		kind byte // 'c' a literal, '*' or '?'
	}
	var p []tok
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == '\\' && i+1 < len(rs):
			i++
			p = append(p, tok{rs[i], 'c'})
		case rs[i] == '*' || rs[i] == '?':
			p = append(p, tok{kind: byte(rs[i])})
		default:
			p = append(p, tok{rs[i], 'c'})
		}
	}
	str := []rune(s)
	// prev[j]: p[:i] matches str[:j].
	prev := make([]bool, len(str)+1)
	prev[0] = true
	for _, t := range p {
		cur := make([]bool, len(str)+1)
		if t.kind == '*' {
			cur[0] = prev[0]
		}
		for j := 1; j <= len(str); j++ {
			switch t.kind {
			case '*':
				cur[j] = prev[j] || cur[j-1]
			case '?':
				cur[j] = prev[j-1]
			default:
				cur[j] = prev[j-1] && str[j-1] == t.r
			}
		}
		prev = cur
	}
	return prev[len(str)]
}

func summarizeFilters(fs []Filter) string {
	if len(fs) == 0 {
		return "all"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + strings.Join(f.Values, "|")
	}
	return summarize(parts)
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

// InstanceView is an instance as EC2 describes it: the lab's instance with
// its network placement, groups and attributes.
type InstanceView struct {
	Instance
	VPCID           string
	SubnetID        string
	SecurityGroups  []SecurityGroup // ID and Name only
	SourceDestCheck bool
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
		"network-interface.addresses.private-ip-address": {v.PrivateIP},
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

// MatchFilters holds a resource to EC2 filters: fields are its values per
// filter name (known names are fields' keys), tags answer tag:<key> and
// tag-key. For the wire API's resources that the cloud keeps no list of
// (network interfaces, tags, regions).
func MatchFilters(filters []Filter, fields map[string][]string, tags map[string]string) (bool, error) {
	return matchFilters(filters, slices.Collect(maps.Keys(fields)), fields, tags)
}

func (c *Cloud) instanceViewLocked(rec *instanceRec) InstanceView {
	v := InstanceView{Instance: rec.clone(), VPCID: c.aws.net.VPCID, SourceDestCheck: true}
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

// RouteTableView is the cluster's route table as EC2 describes it.
type RouteTableView struct {
	ID     string
	VPCID  string
	Tags   map[string]string
	Routes []AWSRoute
	// Subnets associated with it (all of them: it is the VPC's main table).
	SubnetIDs []string
}

// AWSRoute is one row of the route table: local, the internet gateway, or
// a Pod CIDR to an instance (Route).
type AWSRoute struct {
	DestinationCIDR string
	GatewayID       string // "local" or the igw
	InstanceID      string
	State           string
	Origin          string // CreateRouteTable or CreateRoute
}

// DescribeRouteTablesAWS answers EC2 DescribeRouteTables (filters
// route-table-id, vpc-id, tag:K, tag-key).
func (c *Cloud) DescribeRouteTablesAWS(ctx context.Context, ids []string, filters []Filter) ([]RouteTableView, error) {
	var out []RouteTableView
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeRouteTables, summarizeFilters(filters), ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		n := c.aws.net
		for _, id := range ids {
			if id != n.RouteTableID {
				return "", errorf(ErrRouteTableNotFound, "The routeTable ID '%s' does not exist", id)
			}
		}
		tags := map[string]string{c.ClusterTagKey(): "owned", "Name": c.cfg.ClusterID}
		ok, err := matchFilters(filters, []string{"route-table-id", "vpc-id"}, map[string][]string{"route-table-id": {n.RouteTableID}, "vpc-id": {n.VPCID}}, tags)
		if err != nil || !ok {
			return "0 route tables", err
		}
		rt := RouteTableView{ID: n.RouteTableID, VPCID: n.VPCID, Tags: tags}
		rt.Routes = append(rt.Routes,
			AWSRoute{DestinationCIDR: n.CIDR, GatewayID: "local", State: RouteActive, Origin: "CreateRouteTable"},
			AWSRoute{DestinationCIDR: "0.0.0.0/0", GatewayID: n.InternetGatewayID, State: RouteActive, Origin: "CreateRoute"})
		for _, r := range c.routesLocked() {
			rt.Routes = append(rt.Routes, AWSRoute{DestinationCIDR: r.DestinationCIDR, InstanceID: r.InstanceID, State: r.State, Origin: "CreateRoute"})
		}
		for _, s := range n.Subnets {
			rt.SubnetIDs = append(rt.SubnetIDs, s.ID)
		}
		out = []RouteTableView{rt}
		return fmt.Sprintf("1 route table, %d routes", len(rt.Routes)), nil
	})
	return out, err
}

// CheckRouteTable reports whether id is the cluster's route table, for
// CreateRoute and DeleteRoute, which name it.
func (c *Cloud) CheckRouteTable(id string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if id != c.aws.net.RouteTableID {
		return errorf(ErrRouteTableNotFound, "The routeTable ID '%s' does not exist", id)
	}
	return nil
}

// CreateTags tags instances, security groups and subnets (and accepts,
// without storing, the VPC's, route table's and gateway's IDs, whose tags
// are the lab's).
func (c *Cloud) CreateTags(ctx context.Context, ids []string, tags map[string]string) error {
	return c.awsCall(ctx, ServiceEC2, ActionCreateTags, "ids="+summarize(ids)+" tags="+summarizeTags(tags), ids, func(emit emitFunc) (string, error) {
		if err := validateTags(tags); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			if !c.ec2ResourceExistsLocked(id) {
				return "", errorf(ErrInvalidParameter, "The ID '%s' is not valid", id)
			}
		}
		for _, id := range ids {
			if rec, ok := c.instances[id]; ok {
				if rec.Tags == nil {
					rec.Tags = map[string]string{}
				}
				maps.Copy(rec.Tags, tags)
				emit(EventInstance, id)
			}
			if g, ok := c.aws.groups[id]; ok {
				if g.Tags == nil {
					g.Tags = map[string]string{}
				}
				maps.Copy(g.Tags, tags)
				emit(EventSecurityGroup, id)
			}
			if i := c.subnetIndexLocked(id); i >= 0 {
				sn := &c.aws.net.Subnets[i]
				if sn.Tags == nil {
					sn.Tags = map[string]string{}
				}
				maps.Copy(sn.Tags, tags)
				emit(EventSubnet, id)
			}
		}
		return fmt.Sprintf("tagged %d resources", len(ids)), nil
	})
}

// DeleteTags removes tag keys from instances, security groups and subnets.
func (c *Cloud) DeleteTags(ctx context.Context, ids []string, keys []string) error {
	return c.awsCall(ctx, ServiceEC2, ActionDeleteTags, "ids="+summarize(ids)+" keys="+summarize(keys), ids, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			if !c.ec2ResourceExistsLocked(id) {
				return "", errorf(ErrInvalidParameter, "The ID '%s' is not valid", id)
			}
		}
		for _, id := range ids {
			if rec, ok := c.instances[id]; ok {
				for _, k := range keys {
					delete(rec.Tags, k)
				}
				emit(EventInstance, id)
			}
			if g, ok := c.aws.groups[id]; ok {
				for _, k := range keys {
					delete(g.Tags, k)
				}
				emit(EventSecurityGroup, id)
			}
			if i := c.subnetIndexLocked(id); i >= 0 {
				for _, k := range keys {
					delete(c.aws.net.Subnets[i].Tags, k)
				}
				emit(EventSubnet, id)
			}
		}
		return fmt.Sprintf("untagged %d resources", len(ids)), nil
	})
}

func (c *Cloud) ec2ResourceExistsLocked(id string) bool {
	if _, ok := c.instances[id]; ok {
		return true
	}
	if _, ok := c.aws.groups[id]; ok {
		return true
	}
	n := c.aws.net
	return id == n.VPCID || id == n.RouteTableID || id == n.InternetGatewayID ||
		slices.ContainsFunc(n.Subnets, func(s AWSSubnet) bool { return s.ID == id })
}

// EventSecurityGroup is published when a security group changes.
const EventSecurityGroup = "securitygroup"

// EventSubnet is published when a subnet's tags change.
const EventSubnet = "subnet"

func (c *Cloud) subnetIndexLocked(id string) int {
	return slices.IndexFunc(c.aws.net.Subnets, func(s AWSSubnet) bool { return s.ID == id })
}

// nextSeqLocked numbers ARNs.
func (c *Cloud) nextSeqLocked() uint64 {
	c.aws.seq++
	return c.aws.seq
}

// Read runs an EC2 read that touches no model state (DescribeRegions)
// through the call pipeline: IAM, throttling and the call log apply.
func (c *Cloud) Read(ctx context.Context, action, request string) error {
	return c.awsCall(ctx, ServiceEC2, action, request, nil, func(emitFunc) (string, error) { return "ok", nil })
}

// TaggedResource is an EC2 resource with its tags, for DescribeTags; Type
// is EC2's resource type (instance, security-group, subnet, vpc,
// route-table).
type TaggedResource struct {
	ID, Type string
	Tags     map[string]string
}

// TaggedResources lists the tags of every EC2 resource the lab has, in
// one EC2 DescribeTags call.
func (c *Cloud) TaggedResources(ctx context.Context) ([]TaggedResource, error) {
	var out []TaggedResource
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeTags, "all", nil, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, rec := range c.sortedInstancesLocked() {
			v := c.instanceViewLocked(rec)
			out = append(out, TaggedResource{ID: v.ID, Type: "instance", Tags: v.Tags})
		}
		for _, id := range slices.Sorted(maps.Keys(c.aws.groups)) {
			out = append(out, TaggedResource{ID: id, Type: "security-group", Tags: cloneTags(c.aws.groups[id].Tags)})
		}
		n := c.aws.net
		for _, s := range n.Subnets {
			out = append(out, TaggedResource{ID: s.ID, Type: "subnet", Tags: cloneTags(s.Tags)})
		}
		out = append(out, TaggedResource{ID: n.VPCID, Type: "vpc", Tags: map[string]string{c.ClusterTagKey(): "owned"}},
			TaggedResource{ID: n.RouteTableID, Type: "route-table", Tags: map[string]string{c.ClusterTagKey(): "owned", "Name": c.cfg.ClusterID}})
		return fmt.Sprintf("%d resources", len(out)), nil
	})
	return out, err
}
