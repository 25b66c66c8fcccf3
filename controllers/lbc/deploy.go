package lbc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/controllers/internal/live"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Subnet tags the real controller discovers subnets by.
const (
	tagRoleELB         = "kubernetes.io/role/elb"
	tagRoleInternalELB = "kubernetes.io/role/internal-elb"
	clusterTagPrefix   = "kubernetes.io/cluster/"
)

// NLB target group health check, the real controller's defaults for a
// TCP target group: TCP on the traffic port every 10s, 3 to change state.
const (
	hcPort      = "traffic-port"
	hcInterval  = 10
	hcTimeout   = 10
	hcThreshold = 3
)

// apiCode is the AWS error code of err ("" for none).
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// targetGroupSpec is one listener's target group as the model wants it.
type targetGroupSpec struct {
	name     string
	listener cloud.Listener
	targets  []cloud.Target
	tags     map[string]string
}

// targetGroups splits the model into one target group per listener, each
// with the targets on the listener's target port.
func targetGroups(m Model, svc *v1.Service) []targetGroupSpec {
	out := make([]targetGroupSpec, 0, len(m.Listeners))
	for _, l := range m.Listeners {
		tags := maps.Clone(m.Tags)
		tags[TagResource] = svc.Namespace + "/" + svc.Name + ":" + strconv.Itoa(int(l.Port))
		spec := targetGroupSpec{name: TargetGroupName(svc, l, m.TargetType), listener: l, tags: tags}
		for _, t := range m.Targets {
			if t.Port == l.TargetPort {
				spec.targets = append(spec.targets, t)
			}
		}
		out = append(out, spec)
	}
	return out
}

// findLoadBalancer describes the load balancer by name; nil when there is
// none.
func (c *Controller) findLoadBalancer(ctx context.Context, name string) (*v2types.LoadBalancer, error) {
	out, err := c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if apiCode(err) == cloud.ErrLBNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describing load balancer %s: %w", name, err)
	}
	if len(out.LoadBalancers) == 0 {
		return nil, nil
	}
	return &out.LoadBalancers[0], nil
}

// subnets picks one subnet per zone in the VPC, as the real controller's
// subnet discovery does: those tagged with the cluster tag, preferring the
// ones whose role tag fits the scheme (kubernetes.io/role/elb for
// internet-facing, kubernetes.io/role/internal-elb for internal).
func (c *Controller) subnets(ctx context.Context, scheme string) ([]string, error) {
	out, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{c.cfg.AWS.VPCID}},
		{Name: aws.String("tag-key"), Values: []string{clusterTagPrefix + c.cfg.AWS.ClusterID}},
	}})
	if err != nil {
		return nil, fmt.Errorf("discovering subnets: %w", err)
	}
	role := tagRoleELB
	if scheme == cloud.SchemeInternal {
		role = tagRoleInternalELB
	}
	hasRole := func(s ec2types.Subnet) bool {
		return slices.ContainsFunc(s.Tags, func(t ec2types.Tag) bool { return aws.ToString(t.Key) == role })
	}
	cands := out.Subnets
	if slices.ContainsFunc(cands, hasRole) {
		cands = slices.DeleteFunc(slices.Clone(cands), func(s ec2types.Subnet) bool { return !hasRole(s) })
	}
	byZone := map[string]string{}
	for _, s := range cands {
		z, id := aws.ToString(s.AvailabilityZone), aws.ToString(s.SubnetId)
		if cur, ok := byZone[z]; !ok || id < cur {
			byZone[z] = id
		}
	}
	if len(byZone) == 0 {
		return nil, fmt.Errorf("no subnet in %s is tagged %s%s", c.cfg.AWS.VPCID, clusterTagPrefix, c.cfg.AWS.ClusterID)
	}
	ids := slices.Collect(maps.Values(byZone))
	slices.Sort(ids)
	return ids, nil
}

func v2Tags(m map[string]string) []v2types.Tag {
	out := make([]v2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, v2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// deploy makes ELBv2 (and, for instance targets, the nodes' security
// group) match the model, reading what exists first and changing only the
// difference. It returns the load balancer's DNS name and whether it
// changed anything.
func (c *Controller) deploy(ctx context.Context, m Model, svc *v1.Service) (string, bool, error) {
	changed := false
	scheme := Scheme(svc)
	lb, err := c.findLoadBalancer(ctx, m.Name)
	if err != nil {
		return "", false, err
	}
	if lb == nil {
		if err := live.ConfirmService(ctx, c.cfg.Client.CoreV1(), svc); err != nil {
			return "", false, err
		}
		subnets, err := c.subnets(ctx, scheme)
		if err != nil {
			return "", false, err
		}
		out, err := c.elb.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
			Name: aws.String(m.Name), Type: v2types.LoadBalancerTypeEnumNetwork, Scheme: v2types.LoadBalancerSchemeEnum(scheme),
			IpAddressType: v2types.IpAddressTypeIpv4, Subnets: subnets, Tags: v2Tags(m.Tags),
		})
		if err != nil {
			return "", false, fmt.Errorf("creating load balancer %s: %w", m.Name, err)
		}
		if len(out.LoadBalancers) == 0 {
			return "", false, fmt.Errorf("creating load balancer %s: the answer names no load balancer", m.Name)
		}
		lb, changed = &out.LoadBalancers[0], true
	} else if string(lb.Scheme) != scheme {
		// An NLB's scheme is fixed; the real controller replaces the load
		// balancer, the lab asks for the Service to be created again.
		return aws.ToString(lb.DNSName), false, fmt.Errorf("load balancer %s exists with scheme %s, want %s (delete and recreate the Service to change it)", m.Name, lb.Scheme, scheme)
	}
	lbARN := aws.ToString(lb.LoadBalancerArn)
	dns := aws.ToString(lb.DNSName)

	if !changed {
		tagged, err := c.addMissingTags(ctx, lbARN, m.Tags)
		if err != nil {
			return dns, false, err
		}
		changed = tagged
	}

	tgOut, err := c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil {
		return dns, changed, fmt.Errorf("describing target groups of %s: %w", m.Name, err)
	}
	lsOut, err := c.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil {
		return dns, changed, fmt.Errorf("describing listeners of %s: %w", m.Name, err)
	}
	haveTG := map[string]v2types.TargetGroup{}
	for _, tg := range tgOut.TargetGroups {
		haveTG[aws.ToString(tg.TargetGroupName)] = tg
	}
	haveL := map[int32]v2types.Listener{}
	for _, l := range lsOut.Listeners {
		haveL[aws.ToInt32(l.Port)] = l
	}

	specs := targetGroups(m, svc)
	wantPorts := map[int32]bool{}
	wantTGs := map[string]bool{}
	for _, s := range specs {
		wantPorts[s.listener.Port] = true
		wantTGs[s.name] = true
		tg, ok := haveTG[s.name]
		if !ok {
			// Not attached yet: CreateTargetGroup answers the existing group
			// for the same name and settings, so a create that succeeded
			// before a failed CreateListener is found again.
			out, err := c.elb.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
				Name: aws.String(s.name), Protocol: v2types.ProtocolEnum(s.listener.Protocol), Port: aws.Int32(s.listener.TargetPort),
				VpcId: aws.String(c.cfg.AWS.VPCID), TargetType: v2types.TargetTypeEnum(m.TargetType),
				HealthCheckProtocol: v2types.ProtocolEnumTcp, HealthCheckPort: aws.String(hcPort),
				HealthCheckIntervalSeconds: aws.Int32(hcInterval), HealthCheckTimeoutSeconds: aws.Int32(hcTimeout),
				HealthyThresholdCount: aws.Int32(hcThreshold), UnhealthyThresholdCount: aws.Int32(hcThreshold),
				Tags: v2Tags(s.tags),
			})
			if err != nil {
				return dns, changed, fmt.Errorf("creating target group %s: %w", s.name, err)
			}
			if len(out.TargetGroups) == 0 {
				return dns, changed, fmt.Errorf("creating target group %s: the answer names no target group", s.name)
			}
			tg, changed = out.TargetGroups[0], true
		} else if tg.HealthCheckProtocol != v2types.ProtocolEnumTcp || aws.ToString(tg.HealthCheckPort) != hcPort {
			if _, err := c.elb.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{
				TargetGroupArn: tg.TargetGroupArn, HealthCheckProtocol: v2types.ProtocolEnumTcp, HealthCheckPort: aws.String(hcPort),
			}); err != nil {
				return dns, changed, fmt.Errorf("configuring health check of %s: %w", s.name, err)
			}
			changed = true
		}
		tgARN := aws.ToString(tg.TargetGroupArn)
		moved, err := c.syncTargets(ctx, tgARN, s)
		if err != nil {
			return dns, changed, err
		}
		changed = changed || moved

		l, ok := haveL[s.listener.Port]
		switch {
		case !ok:
			if _, err := c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
				LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(s.listener.Port), Protocol: v2types.ProtocolEnum(s.listener.Protocol),
				DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}},
			}); err != nil {
				return dns, changed, fmt.Errorf("creating listener %d of %s: %w", s.listener.Port, m.Name, err)
			}
			changed = true
		case string(l.Protocol) != s.listener.Protocol || forwardsTo(l) != tgARN:
			if _, err := c.elb.ModifyListener(ctx, &elbv2.ModifyListenerInput{
				ListenerArn: l.ListenerArn, Protocol: v2types.ProtocolEnum(s.listener.Protocol),
				DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}},
			}); err != nil {
				return dns, changed, fmt.Errorf("updating listener %d of %s: %w", s.listener.Port, m.Name, err)
			}
			changed = true
		}
	}
	for _, port := range slices.Sorted(maps.Keys(haveL)) {
		if !wantPorts[port] {
			if _, err := c.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: haveL[port].ListenerArn}); err != nil {
				return dns, changed, fmt.Errorf("deleting listener %d of %s: %w", port, m.Name, err)
			}
			changed = true
		}
	}
	var stale []v2types.TargetGroup
	for _, name := range slices.Sorted(maps.Keys(haveTG)) {
		if !wantTGs[name] {
			stale = append(stale, haveTG[name])
		}
	}
	if len(stale) > 0 {
		if err := c.deleteTargetGroups(ctx, stale); err != nil {
			return dns, changed, err
		}
		changed = true
	}
	if m.TargetType == cloud.TargetTypeInstance {
		opened, err := c.openNodePorts(ctx, svc, specs)
		if err != nil {
			return dns, changed, err
		}
		changed = changed || opened
	}
	return dns, changed, nil
}

func forwardsTo(l v2types.Listener) string {
	for _, a := range l.DefaultActions {
		if a.Type == v2types.ActionTypeEnumForward && a.TargetGroupArn != nil {
			return *a.TargetGroupArn
		}
	}
	return ""
}

// addMissingTags reads the resource's tags and adds those the model has
// and the resource lacks or has with another value.
func (c *Controller) addMissingTags(ctx context.Context, arn string, want map[string]string) (bool, error) {
	out, err := c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		return false, fmt.Errorf("describing tags of %s: %w", arn, err)
	}
	have := map[string]string{}
	for _, d := range out.TagDescriptions {
		for _, t := range d.Tags {
			have[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	missing := map[string]string{}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	if _, err := c.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{arn}, Tags: v2Tags(missing)}); err != nil {
		return false, fmt.Errorf("tagging %s: %w", arn, err)
	}
	return true, nil
}

// syncTargets registers the spec's targets the group lacks and
// deregisters those it should not have.
func (c *Controller) syncTargets(ctx context.Context, tgARN string, s targetGroupSpec) (bool, error) {
	out, err := c.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
	if err != nil {
		return false, fmt.Errorf("describing targets of %s: %w", s.name, err)
	}
	type key struct {
		id   string
		port int32
	}
	want := map[key]bool{}
	for _, t := range s.targets {
		want[key{t.ID, t.Port}] = true
	}
	have := map[key]bool{}
	var stale []v2types.TargetDescription
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil {
			continue
		}
		k := key{aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)}
		have[k] = true
		if !want[k] {
			stale = append(stale, v2types.TargetDescription{Id: d.Target.Id, Port: d.Target.Port})
		}
	}
	var missing []v2types.TargetDescription
	for _, t := range s.targets {
		if !have[key{t.ID, t.Port}] {
			missing = append(missing, v2types.TargetDescription{Id: aws.String(t.ID), Port: aws.Int32(t.Port)})
		}
	}
	changed := false
	if len(missing) > 0 {
		if _, err := c.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: missing}); err != nil {
			return false, fmt.Errorf("registering targets with %s: %w", s.name, err)
		}
		changed = true
	}
	if len(stale) > 0 {
		if _, err := c.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: stale}); err != nil {
			return changed, fmt.Errorf("deregistering targets from %s: %w", s.name, err)
		}
		changed = true
	}
	return changed, nil
}

// deleteTargetGroups closes the NodePorts of instance groups on the nodes'
// security group, then deletes the groups.
func (c *Controller) deleteTargetGroups(ctx context.Context, tgs []v2types.TargetGroup) error {
	for _, tg := range tgs {
		if tg.TargetType == v2types.TargetTypeEnumInstance {
			if err := c.closeNodePort(ctx, sgProtocol(string(tg.Protocol)), aws.ToInt32(tg.Port)); err != nil {
				return err
			}
		}
		if _, err := c.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: tg.TargetGroupArn}); err != nil && apiCode(err) != cloud.ErrTargetGroupNotFound {
			return fmt.Errorf("deleting target group %s: %w", aws.ToString(tg.TargetGroupName), err)
		}
	}
	return nil
}

// sgProtocol is a target group protocol as a security group rule names it.
func sgProtocol(p string) string {
	if p == "UDP" {
		return "udp"
	}
	return "tcp"
}

// sourceRanges are the CIDRs the nodes admit on an instance target
// group's NodePort: the Service's loadBalancerSourceRanges, else anywhere
// (internet-facing) or the VPC (internal); plus the VPC, where the NLB's
// health checks come from. Instance targets keep the client's IP, so the
// nodes see the clients themselves.
func sourceRanges(svc *v1.Service, vpcCIDR string) []string {
	src := slices.Clone(svc.Spec.LoadBalancerSourceRanges)
	if len(src) == 0 {
		src = []string{"0.0.0.0/0"}
		if Scheme(svc) == cloud.SchemeInternal {
			src = []string{vpcCIDR}
		}
	}
	if !slices.Contains(src, "0.0.0.0/0") && !slices.Contains(src, vpcCIDR) {
		src = append(src, vpcCIDR)
	}
	slices.Sort(src)
	return slices.Compact(src)
}

// nodeGroups finds the security groups of the target instances that carry
// the cluster tag (or the one group they have, when none does), as the
// real controller picks the group of a target's network interface.
func (c *Controller) nodeGroups(ctx context.Context, ids []string) ([]ec2types.SecurityGroup, error) {
	in, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		return nil, fmt.Errorf("describing target instances: %w", err)
	}
	var gids []string
	for _, r := range in.Reservations {
		for _, i := range r.Instances {
			for _, g := range i.SecurityGroups {
				if id := aws.ToString(g.GroupId); !slices.Contains(gids, id) {
					gids = append(gids, id)
				}
			}
		}
	}
	if len(gids) == 0 {
		return nil, nil
	}
	slices.Sort(gids)
	out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: gids})
	if err != nil {
		return nil, fmt.Errorf("describing the nodes' security groups: %w", err)
	}
	tagged := slices.DeleteFunc(slices.Clone(out.SecurityGroups), func(g ec2types.SecurityGroup) bool {
		return !slices.ContainsFunc(g.Tags, func(t ec2types.Tag) bool { return aws.ToString(t.Key) == clusterTagPrefix+c.cfg.AWS.ClusterID })
	})
	if len(tagged) == 0 && len(out.SecurityGroups) == 1 {
		return out.SecurityGroups, nil
	}
	return tagged, nil
}

// portCIDRs are the CIDR sources of g's rules for exactly proto/port.
func portCIDRs(g ec2types.SecurityGroup, proto string, port int32) []string {
	var out []string
	for _, p := range g.IpPermissions {
		if aws.ToString(p.IpProtocol) != proto || aws.ToInt32(p.FromPort) != port || aws.ToInt32(p.ToPort) != port {
			continue
		}
		for _, r := range p.IpRanges {
			out = append(out, aws.ToString(r.CidrIp))
		}
	}
	return out
}

func cidrPerm(proto string, port int32, cidrs []string) []ec2types.IpPermission {
	p := ec2types.IpPermission{IpProtocol: aws.String(proto), FromPort: aws.Int32(port), ToPort: aws.Int32(port)}
	for _, c := range cidrs {
		p.IpRanges = append(p.IpRanges, ec2types.IpRange{CidrIp: aws.String(c)})
	}
	return []ec2types.IpPermission{p}
}

// openNodePorts makes the nodes' security group admit the source ranges
// on each instance target group's NodePort, and nothing else from CIDRs
// there: a NodePort belongs to one Service, so the rules on it are this
// controller's to keep (rules naming a source group are left alone).
func (c *Controller) openNodePorts(ctx context.Context, svc *v1.Service, specs []targetGroupSpec) (bool, error) {
	var ids []string
	for _, s := range specs {
		for _, t := range s.targets {
			if !slices.Contains(ids, t.ID) {
				ids = append(ids, t.ID)
			}
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	slices.Sort(ids)
	groups, err := c.nodeGroups(ctx, ids)
	if err != nil {
		return false, err
	}
	want := sourceRanges(svc, c.cfg.AWS.VPCCIDR)
	changed := false
	for _, g := range groups {
		gid := g.GroupId
		for _, s := range specs {
			proto, port := sgProtocol(s.listener.Protocol), s.listener.TargetPort
			have := portCIDRs(g, proto, port)
			var add, drop []string
			for _, cidr := range want {
				if !slices.Contains(have, cidr) {
					add = append(add, cidr)
				}
			}
			for _, cidr := range have {
				if !slices.Contains(want, cidr) {
					drop = append(drop, cidr)
				}
			}
			if len(add) > 0 {
				if _, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: gid, IpPermissions: cidrPerm(proto, port, add)}); err != nil {
					return changed, fmt.Errorf("opening NodePort %d on %s: %w", port, aws.ToString(gid), err)
				}
				changed = true
			}
			if len(drop) > 0 {
				if _, err := c.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: gid, IpPermissions: cidrPerm(proto, port, drop)}); err != nil {
					return changed, fmt.Errorf("closing NodePort %d on %s to %v: %w", port, aws.ToString(gid), drop, err)
				}
				changed = true
			}
		}
	}
	return changed, nil
}

// closeNodePort revokes the CIDR rules for proto/port from the cluster's
// security groups in the VPC (a deleted target group's NodePort: its
// targets may be gone already, so the groups are found by tag).
func (c *Controller) closeNodePort(ctx context.Context, proto string, port int32) error {
	out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{c.cfg.AWS.VPCID}},
		{Name: aws.String("tag-key"), Values: []string{clusterTagPrefix + c.cfg.AWS.ClusterID}},
	}})
	if err != nil {
		return fmt.Errorf("describing the cluster's security groups: %w", err)
	}
	for _, g := range out.SecurityGroups {
		have := portCIDRs(g, proto, port)
		if len(have) == 0 {
			continue
		}
		if _, err := c.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: g.GroupId, IpPermissions: cidrPerm(proto, port, have)}); err != nil &&
			apiCode(err) != cloud.ErrPermissionNotFound {
			return fmt.Errorf("closing NodePort %d on %s: %w", port, aws.ToString(g.GroupId), err)
		}
	}
	return nil
}

// ownedTargetGroups finds every target group tagged for the Service in
// this cluster, attached or not (one created before a failed
// CreateListener is attached to nothing), as the real controller finds
// its resources by their tags.
func (c *Controller) ownedTargetGroups(ctx context.Context, svc *v1.Service) ([]v2types.TargetGroup, error) {
	all, err := c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{})
	if err != nil {
		return nil, fmt.Errorf("describing target groups: %w", err)
	}
	byARN := map[string]v2types.TargetGroup{}
	for _, tg := range all.TargetGroups {
		byARN[aws.ToString(tg.TargetGroupArn)] = tg
	}
	arns := slices.Sorted(maps.Keys(byARN))
	var out []v2types.TargetGroup
	// DescribeTags takes at most 20 resources.
	for chunk := range slices.Chunk(arns, 20) {
		tags, err := c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return nil, fmt.Errorf("describing target group tags: %w", err)
		}
		for _, d := range tags.TagDescriptions {
			m := map[string]string{}
			for _, t := range d.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			if m[TagStack] == svc.Namespace+"/"+svc.Name && m[TagCluster] == c.cfg.ClusterName {
				out = append(out, byARN[aws.ToString(d.ResourceArn)])
			}
		}
	}
	return out, nil
}

// teardown deletes the Service's listeners, target groups (closing their
// NodePorts) and load balancer, in the order AWS allows: a target group
// in use by a listener cannot be deleted.
func (c *Controller) teardown(ctx context.Context, svc *v1.Service) error {
	name := LoadBalancerName(svc)
	lb, err := c.findLoadBalancer(ctx, name)
	if err != nil {
		return err
	}
	var tgs []v2types.TargetGroup
	if lb != nil {
		ls, err := c.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			return fmt.Errorf("describing listeners of %s: %w", name, err)
		}
		attached, err := c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			return fmt.Errorf("describing target groups of %s: %w", name, err)
		}
		tgs = attached.TargetGroups
		for _, l := range ls.Listeners {
			if _, err := c.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: l.ListenerArn}); err != nil && apiCode(err) != cloud.ErrListenerNotFound {
				return fmt.Errorf("deleting listener %d of %s: %w", aws.ToInt32(l.Port), name, err)
			}
		}
	}
	owned, err := c.ownedTargetGroups(ctx, svc)
	if err != nil {
		return err
	}
	for _, tg := range owned {
		if !slices.ContainsFunc(tgs, func(h v2types.TargetGroup) bool {
			return aws.ToString(h.TargetGroupArn) == aws.ToString(tg.TargetGroupArn)
		}) {
			tgs = append(tgs, tg)
		}
	}
	slices.SortFunc(tgs, func(a, b v2types.TargetGroup) int {
		return cmp.Compare(aws.ToString(a.TargetGroupName), aws.ToString(b.TargetGroupName))
	})
	if err := c.deleteTargetGroups(ctx, tgs); err != nil {
		return err
	}
	if lb != nil {
		if _, err := c.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lb.LoadBalancerArn}); err != nil && apiCode(err) != cloud.ErrLBNotFound {
			return fmt.Errorf("deleting load balancer %s: %w", name, err)
		}
	}
	return nil
}
