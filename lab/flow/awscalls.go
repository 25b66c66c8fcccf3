package flow

import (
	"regexp"
	"strings"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// The upstream AWS provider (k8s.io/cloud-provider-aws) makes real AWS
// calls through the lab's AWS API: a Service without annotations gets a
// Classic ELB (service elasticloadbalancing), one annotated
// service.beta.kubernetes.io/aws-load-balancer-type: nlb an NLB
// (elasticloadbalancingv2). The lab's own provider calls the lab's Go API
// (no service). Steps 3 and 4 name the calls of whichever ran:
//
//	step 3: CreateLoadBalancer (lab, ELB or ELBv2)
//	step 4: lab:   RegisterTargets + ConfigureHealthCheck
//	        ELB:   RegisterInstancesWithLoadBalancer + ConfigureHealthCheck
//	        ELBv2: CreateTargetGroup + RegisterTargets + CreateListener
//
// (k8s.io/cloud-provider-aws v1.37.1, pkg/providers/v1:
// ensureLoadBalancer, ensureLoadBalancerHealthCheck and
// ensureLoadBalancerInstances for ELB; ensureLoadBalancerv2,
// createListenerV2 and ensureTargetGroup for ELBv2.)

// targetActions are step 4's calls for a load balancer of a kind ("" is
// the lab's own), in the order the provider makes them.
func targetActions(service string) []string {
	switch service {
	case cloud.ServiceELB:
		return []string{cloud.ActionRegisterInstancesWithLB, cloud.ActionConfigureHealthCheck}
	case cloud.ServiceELBv2:
		return []string{cloud.ActionCreateTargetGroup, cloud.ActionRegisterTargets, cloud.ActionCreateListener}
	}
	return []string{cloud.ActionRegisterTargets, cloud.ActionConfigureHealthCheck}
}

// apiName is how the AWS CLI names a call's service (aws elb ..., aws
// elbv2 ...), the name students type.
func apiName(service string) string {
	switch service {
	case cloud.ServiceELB:
		return "elb"
	case cloud.ServiceELBv2:
		return "elbv2"
	case cloud.ServiceEC2:
		return "ec2"
	}
	return service
}

// awsServiceOf is the service of a Classic ELB or NLB view's calls.
func awsServiceOf(lb *cloud.LoadBalancer) string {
	if lb != nil && lb.Kind == cloud.LBKindNetwork {
		return cloud.ServiceELBv2
	}
	return cloud.ServiceELB
}

// awsTargetCount counts what the provider registered: a Classic ELB's
// instances (its view has one target per instance and instance port), an
// NLB's targets.
func awsTargetCount(lb *cloud.LoadBalancer) int {
	if lb.Kind != cloud.LBKindClassic {
		return len(lb.Targets)
	}
	ids := map[string]bool{}
	for _, t := range lb.Targets {
		ids[t.ID] = true
	}
	return len(ids)
}

// awsLBCall says whether a call through the AWS API may be about a load
// balancer: every ELB and ELBv2 call, and EC2's security-group calls (the
// provider's k8s-elb-<name> group of a Classic ELB).
func awsLBCall(c cloud.Call) bool {
	switch c.Service {
	case cloud.ServiceELB, cloud.ServiceELBv2:
		return true
	case cloud.ServiceEC2:
		switch c.Action {
		case cloud.ActionCreateSecurityGroup, cloud.ActionAuthorizeSecurityGroupIngress,
			cloud.ActionRevokeSecurityGroupIngress, cloud.ActionDeleteSecurityGroup:
			return true
		}
	}
	return false
}

// awsCallLBsLocked names the load balancers an AWS API call is about.
func (o *Observer) awsCallLBsLocked(c cloud.Call) []string {
	var out []string
	for _, r := range c.Resources {
		lb := ""
		if o.lbOwner.has(r) {
			// A load balancer's own name, even one whose creation failed.
			lb = r
		} else {
			var svc string
			lb, svc = o.cfg.Cloud.AWSResourceOwner(r)
			if lb == "" && svc != "" {
				lb = o.lbNameLocked(svc)
			}
			if lb == "" && c.Action == cloud.ActionCreateTargetGroup {
				lb = o.targetGroupLBLocked(r)
			}
		}
		if lb != "" && !hasAny(out, lb) {
			out = append(out, lb)
		}
	}
	return out
}

var notAlnum = regexp.MustCompile("[^[:alnum:]]")

// targetGroupLBLocked finds the load balancer of a target group that does
// not exist (a refused CreateTargetGroup) from its name, which the
// provider builds as k8s-{namespace:8}-{name:8}-{hash:10}
// (buildTargetGroupName): the one LoadBalancer Service it fits, if only one
// does.
func (o *Observer) targetGroupLBLocked(tg string) string {
	if !strings.HasPrefix(tg, "k8s-") {
		return ""
	}
	found := ""
	for key, v := range o.services {
		ns := notAlnum.ReplaceAllString(v.Namespace, "")
		name := notAlnum.ReplaceAllString(v.Name, "")
		if !strings.HasPrefix(tg, "k8s-"+trunc(ns, 8)+"-"+trunc(name, 8)+"-") {
			continue
		}
		lb := o.lbNameLocked(key)
		if lb == "" || found != "" {
			return ""
		}
		found = lb
	}
	return found
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
