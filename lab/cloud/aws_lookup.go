package cloud

import (
	"strings"
)

// The lab's own look at the Classic ELBs and NLBs, for watchers (the flow
// observer): no call, so nothing in the call log, no fault, no throttle.
// The AWS provider's calls name different things (a load balancer's name,
// an NLB's ARN, a target group's ARN, a listener's ARN, a security group),
// and a watcher needs the load balancer they are about.

// ServiceTag is the tag the AWS provider (and the lab's) puts on a load
// balancer and its target groups: the Service's namespace/name.
const ServiceTag = "kubernetes.io/service-name"

// StackTag is the tag the AWS Load Balancer Controller (the lbc add-on)
// puts on its NLBs and target groups instead: namespace/name too.
const StackTag = "service.k8s.aws/stack"

// TaggedService is the Service a load balancer's or target group's tags
// name, by either tag; "" when neither is there.
func TaggedService(tags map[string]string) string {
	if s := tags[ServiceTag]; s != "" {
		return s
	}
	return tags[StackTag]
}

// ELBSecurityGroupPrefix starts the name of the security group the AWS
// provider creates for a Classic ELB: "k8s-elb-" + the ELB's name.
const ELBSecurityGroupPrefix = "k8s-elb-"

// AWSResourceOwner says which load balancer a resource named in an ELB,
// ELBv2 or EC2 security-group call belongs to: ref is a Classic ELB's or
// NLB's name, an NLB's, target group's or listener's ARN, a target
// group's name, or a security group's ID or name. lb is "" when the
// resource is unknown or belongs to no load balancer yet (a target group
// before its listener); service is the ServiceTag of the resource itself
// when it has one.
func (c *Cloud) AWSResourceOwner(ref string) (lb, service string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if l, ok := c.aws.elbs[ref]; ok {
		return l.Name, TaggedService(l.Tags)
	}
	if l, ok := c.aws.nlbs[ref]; ok {
		return l.Name, TaggedService(l.Tags)
	}
	if l, ok := c.aws.lsns[ref]; ok {
		if n, ok := c.aws.nlbs[l.LBARN]; ok {
			return n.Name, TaggedService(n.Tags)
		}
		return "", ""
	}
	for _, l := range c.aws.nlbs {
		if l.Name == ref {
			return l.Name, TaggedService(l.Tags)
		}
	}
	for _, tg := range c.aws.tgs {
		if tg.ARN != ref && tg.Name != ref {
			continue
		}
		for _, arn := range tg.LoadBalancerARNs {
			if n, ok := c.aws.nlbs[arn]; ok {
				return n.Name, TaggedService(tg.Tags)
			}
		}
		return "", TaggedService(tg.Tags)
	}
	name := ref
	if g, ok := c.aws.groups[ref]; ok {
		name = g.Name
	}
	if rest, ok := strings.CutPrefix(name, ELBSecurityGroupPrefix); ok && rest != "" {
		return rest, ""
	}
	return "", ""
}

// IsThrottleCode says whether an error code is a throttle: Throttling (the
// lab's API, ELB, ELBv2) or RequestLimitExceeded (EC2).
func IsThrottleCode(code string) bool {
	return code == ErrThrottling || code == ErrRequestLimitExceeded
}

// IsDenyCode says whether an error code is an IAM denial: AccessDenied
// (the lab's API, ELB, ELBv2) or UnauthorizedOperation (EC2).
func IsDenyCode(code string) bool {
	return code == ErrAccessDenied || code == ErrUnauthorizedOperation
}
