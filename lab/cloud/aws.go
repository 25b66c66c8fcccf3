package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
)

// The AWS model: the resources behind the AWS wire API (lab/awsapi) that
// the upstream k8s.io/cloud-provider-aws reads and writes. Instances and
// the Route controller's routes are the ones the rest of the lab uses; the
// VPC, subnets, internet gateway, route table, security groups, Classic
// ELBs and NLBs live here. Every action runs through the same call
// pipeline as the lab's own API (IAM deny, rate limit, latency, injected
// failures, call log), tagged with its AWS service.
//
// One file per resource, as moto lays out its models: aws.go (services,
// action names, the state and the call wrapper), aws_instances.go,
// aws_vpc.go (VPC, subnets, zones), aws_routetables.go,
// aws_securitygroups.go, aws_filters.go (EC2 filters and wildcards),
// aws_tags.go, aws_elb.go (Classic ELB), aws_elbv2.go (NLB, target groups,
// listeners), aws_views.go, aws_lookup.go, aws_cleanup.go and
// aws_persist.go.

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

// AWS actions beyond the lab's own (faults.go), the names the model's
// calls are logged under; names shared by ELB and ELBv2
// (CreateLoadBalancer, ...) are one action for Deny and FailNext. Which
// names Deny and FailNext accept is lab/awsapi's list (AWSActions).
const (
	ActionDescribeVpcs                   = "DescribeVpcs"
	ActionDescribeSubnets                = "DescribeSubnets"
	ActionDescribeAvailabilityZones      = "DescribeAvailabilityZones"
	ActionDescribeSecurityGroups         = "DescribeSecurityGroups"
	ActionCreateSecurityGroup            = "CreateSecurityGroup"
	ActionDeleteSecurityGroup            = "DeleteSecurityGroup"
	ActionAuthorizeSecurityGroupIngress  = "AuthorizeSecurityGroupIngress"
	ActionRevokeSecurityGroupIngress     = "RevokeSecurityGroupIngress"
	ActionCreateTags                     = "CreateTags"
	ActionDeleteTags                     = "DeleteTags"
	ActionModifyInstanceAttribute        = "ModifyInstanceAttribute"
	ActionCreateLoadBalancerListeners    = "CreateLoadBalancerListeners"
	ActionDeleteLoadBalancerListeners    = "DeleteLoadBalancerListeners"
	ActionRegisterInstancesWithLB        = "RegisterInstancesWithLoadBalancer"
	ActionDeregisterInstancesFromLB      = "DeregisterInstancesFromLoadBalancer"
	ActionDescribeLoadBalancerAttributes = "DescribeLoadBalancerAttributes"
	ActionModifyLoadBalancerAttributes   = "ModifyLoadBalancerAttributes"
	ActionApplySecurityGroupsToLB        = "ApplySecurityGroupsToLoadBalancer"
	ActionAttachLoadBalancerToSubnets    = "AttachLoadBalancerToSubnets"
	ActionDetachLoadBalancerFromSubnets  = "DetachLoadBalancerFromSubnets"
	ActionAddTags                        = "AddTags"
	ActionDescribeTags                   = "DescribeTags"
	ActionCreateTargetGroup              = "CreateTargetGroup"
	ActionDescribeTargetGroups           = "DescribeTargetGroups"
	ActionModifyTargetGroup              = "ModifyTargetGroup"
	ActionDeleteTargetGroup              = "DeleteTargetGroup"
	ActionDescribeTargetHealth           = "DescribeTargetHealth"
	ActionCreateListener                 = "CreateListener"
	ActionDescribeListeners              = "DescribeListeners"
	ActionModifyListener                 = "ModifyListener"
	ActionDeleteListener                 = "DeleteListener"
	ActionDescribeListenerAttributes     = "DescribeListenerAttributes"
	ActionDescribeRules                  = "DescribeRules"
	ActionDescribeTargetGroupAttributes  = "DescribeTargetGroupAttributes"
	ActionModifyTargetGroupAttributes    = "ModifyTargetGroupAttributes"
	ActionDescribeInstanceHealth         = "DescribeInstanceHealth"
	ActionDescribeNetworkInterfaces      = "DescribeNetworkInterfaces"
	ActionDescribeInstanceTopology       = "DescribeInstanceTopology"
	ActionCreateLoadBalancerPolicy       = "CreateLoadBalancerPolicy"
	ActionSetBackendPolicies             = "SetLoadBalancerPoliciesForBackendServer"
	ActionDescribeInstanceStatus         = "DescribeInstanceStatus"
	ActionDescribeRegions                = "DescribeRegions"
)

// AWSActions returns the AWS wire API's actions that are not also lab
// actions (Actions); Faults.Deny and FailNext accept both. The names come
// from lab/awsapi, where each action is declared once (actions_gen.go).
func AWSActions() []string {
	lab := Actions()
	return slices.DeleteFunc(slices.Clone(wireActions), func(a string) bool {
		_, found := slices.BinarySearch(lab, a)
		return found
	})
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
	// podAddrs are the secondary addresses on each instance's interface,
	// by instance ID (aws_eniaddrs.go); made on first use, not persisted.
	podAddrs podAddrTable
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
