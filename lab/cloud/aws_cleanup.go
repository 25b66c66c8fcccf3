package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// DeleteAWSLoadBalancer deletes a Classic ELB or an NLB by name, with what
// its maker created beside it, as AWS calls made by ctx's caller (the call
// log shows them): for a Classic ELB, its k8s-elb-<name> security group
// after the rules other groups have naming it; for an NLB, its listeners
// and target groups. It is how the lab cleans up a load balancer nobody
// owns any more (an exercise reset after a finalizer was removed by hand),
// in the order cloud-provider-aws's EnsureLoadBalancerDeleted uses.
//
// The rules an NLB's maker opened on the nodes' group stay: they carry no
// name of the load balancer to find them by.
func (c *Cloud) DeleteAWSLoadBalancer(ctx context.Context, name string) error {
	c.mu.RLock()
	_, isELB := c.aws.elbs[name]
	var nlbARN string
	var tgARNs []string
	for arn, lb := range c.aws.nlbs {
		if lb.Name == name {
			nlbARN = arn
		}
	}
	for arn, tg := range c.aws.tgs {
		if nlbARN != "" && slices.Contains(tg.LoadBalancerARNs, nlbARN) {
			tgARNs = append(tgARNs, arn)
		}
	}
	c.mu.RUnlock()
	switch {
	case isELB:
		groups, err := c.DescribeSecurityGroupsAWS(ctx, nil, []Filter{{Name: "group-name", Values: []string{ELBSecurityGroupPrefix + name}}})
		if err != nil {
			return err
		}
		if err := c.DeleteELB(ctx, name); err != nil {
			return err
		}
		for _, g := range groups {
			if err := c.deleteGroupAndReferences(ctx, g.ID); err != nil {
				return err
			}
		}
		return nil
	case nlbARN != "":
		if err := c.DeleteNLB(ctx, nlbARN); err != nil && !IsCode(err, ErrLBNotFound) {
			return err
		}
		var errs []error
		for _, arn := range tgARNs {
			errs = append(errs, c.DeleteTargetGroup(ctx, arn))
		}
		return errors.Join(errs...)
	}
	return errorf(ErrLBNotFound, "no Classic ELB or NLB named %s", name)
}

// deleteGroupAndReferences revokes every rule of another group that names
// the group id, then deletes it (AWS refuses a group still named by a rule
// with DependencyViolation).
func (c *Cloud) deleteGroupAndReferences(ctx context.Context, id string) error {
	referencing, err := c.DescribeSecurityGroupsAWS(ctx, nil, []Filter{{Name: "ip-permission.group-id", Values: []string{id}}})
	if err != nil {
		return err
	}
	for _, g := range referencing {
		var revoke []IPPermission
		for _, p := range g.Ingress {
			if slices.Contains(p.GroupIDs, id) {
				revoke = append(revoke, IPPermission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, GroupIDs: []string{id}})
			}
		}
		if err := c.RevokeIngress(ctx, g.ID, revoke); err != nil {
			return fmt.Errorf("revoking %s's rules naming %s: %w", g.ID, id, err)
		}
	}
	return c.DeleteSecurityGroup(ctx, id)
}
