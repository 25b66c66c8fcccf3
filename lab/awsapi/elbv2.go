package awsapi

import (
	"context"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func (h *Handler) elbv2Actions() []Action {
	return []Action{
		act(h.v2CreateLoadBalancer),
		act(h.v2DescribeLoadBalancers),
		act(h.v2DeleteLoadBalancer),
		act(h.v2DescribeLBAttributes),
		act(h.v2ModifyLBAttributes),
		act(h.v2CreateTargetGroup),
		act(h.v2DescribeTargetGroups),
		act(h.v2ModifyTargetGroup),
		act(h.v2DeleteTargetGroup),
		act(h.v2DescribeTGAttributes),
		act(h.v2ModifyTGAttributes),
		act(h.v2RegisterTargets),
		act(h.v2DeregisterTargets),
		act(h.v2DescribeTargetHealth),
		act(h.v2CreateListener),
		act(h.v2DescribeListeners),
		act(h.v2ModifyListener),
		act(h.v2DeleteListener),
		act(h.v2AddTags),
		act(h.v2DescribeTags),
		act(h.v2DescribeListenerAttributes),
		act(h.v2DescribeRules),
	}
}

func v2Tags(m map[string]string) []v2types.Tag {
	out := []v2types.Tag{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, v2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func v2TagMap(ts []v2types.Tag) (map[string]string, error) {
	m := map[string]string{}
	for i, t := range ts {
		k, v := aws.ToString(t.Key), aws.ToString(t.Value)
		if err := checkELBTag(i+1, k, v); err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

func (h *Handler) toV2LB(lb cloud.NLB) v2types.LoadBalancer {
	created := lb.CreatedAt
	out := v2types.LoadBalancer{
		LoadBalancerArn: aws.String(lb.ARN), LoadBalancerName: aws.String(lb.Name), DNSName: aws.String(lb.DNSName),
		CanonicalHostedZoneId: aws.String("Z31USIVHYNEOWT"), CreatedTime: &created, Scheme: v2types.LoadBalancerSchemeEnum(lb.Scheme),
		State: &v2types.LoadBalancerState{Code: v2types.LoadBalancerStateEnumActive}, Type: v2types.LoadBalancerTypeEnumNetwork,
		VpcId: aws.String(lb.VPCID), IpAddressType: v2types.IpAddressType(lb.IPAddressType), SecurityGroups: slices.Clone(lb.SecurityGroups),
		AvailabilityZones: []v2types.AvailabilityZone{},
		// The lab's NLBs are IPv4: AWS answers "off" for them, and the AWS
		// Load Balancer Controller compares the value with its model's on
		// every reconcile.
		EnablePrefixForIpv6SourceNat: v2types.EnablePrefixForIpv6SourceNatEnumOff,
	}
	for i, s := range lb.Subnets {
		out.AvailabilityZones = append(out.AvailabilityZones, v2types.AvailabilityZone{SubnetId: aws.String(s), ZoneName: aws.String(lb.Zones[i]),
			LoadBalancerAddresses: []v2types.LoadBalancerAddress{}})
	}
	return out
}

func (h *Handler) v2CreateLoadBalancer(ctx context.Context, in *elbv2.CreateLoadBalancerInput) (*elbv2.CreateLoadBalancerOutput, error) {
	subnets := slices.Clone(in.Subnets)
	for _, m := range in.SubnetMappings {
		subnets = append(subnets, aws.ToString(m.SubnetId))
	}
	tags, err := v2TagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	lb, err := h.cfg.Cloud.CreateNLB(ctx, cloud.CreateNLBInput{Name: aws.ToString(in.Name), Subnets: subnets, SecurityGroups: in.SecurityGroups,
		Scheme: string(in.Scheme), Type: string(in.Type), IPAddressType: string(in.IpAddressType), Tags: tags})
	if err != nil {
		return nil, err
	}
	return &elbv2.CreateLoadBalancerOutput{LoadBalancers: []v2types.LoadBalancer{h.toV2LB(lb)}}, nil
}

func (h *Handler) v2DescribeLoadBalancers(ctx context.Context, in *elbv2.DescribeLoadBalancersInput) (*elbv2.DescribeLoadBalancersOutput, error) {
	lbs, err := h.cfg.Cloud.DescribeNLBs(ctx, in.LoadBalancerArns, in.Names)
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeLoadBalancersOutput{LoadBalancers: []v2types.LoadBalancer{}}
	for _, lb := range lbs {
		out.LoadBalancers = append(out.LoadBalancers, h.toV2LB(lb))
	}
	return out, nil
}

func (h *Handler) v2DeleteLoadBalancer(ctx context.Context, in *elbv2.DeleteLoadBalancerInput) (*elbv2.DeleteLoadBalancerOutput, error) {
	return &elbv2.DeleteLoadBalancerOutput{}, h.cfg.Cloud.DeleteNLB(ctx, aws.ToString(in.LoadBalancerArn))
}

func lbAttrs(m map[string]string) []v2types.LoadBalancerAttribute {
	out := []v2types.LoadBalancerAttribute{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, v2types.LoadBalancerAttribute{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func tgAttrs(m map[string]string) []v2types.TargetGroupAttribute {
	out := []v2types.TargetGroupAttribute{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, v2types.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func (h *Handler) v2DescribeLBAttributes(ctx context.Context, in *elbv2.DescribeLoadBalancerAttributesInput) (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
	m, err := h.cfg.Cloud.NLBAttributes(ctx, aws.ToString(in.LoadBalancerArn), nil)
	if err != nil {
		return nil, err
	}
	return &elbv2.DescribeLoadBalancerAttributesOutput{Attributes: lbAttrs(m)}, nil
}

func (h *Handler) v2ModifyLBAttributes(ctx context.Context, in *elbv2.ModifyLoadBalancerAttributesInput) (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
	set := map[string]string{}
	for _, a := range in.Attributes {
		set[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	m, err := h.cfg.Cloud.NLBAttributes(ctx, aws.ToString(in.LoadBalancerArn), set)
	if err != nil {
		return nil, err
	}
	return &elbv2.ModifyLoadBalancerAttributesOutput{Attributes: lbAttrs(m)}, nil
}

func toV2TG(tg cloud.TargetGroup) v2types.TargetGroup {
	hc := tg.HealthCheck
	out := v2types.TargetGroup{
		TargetGroupArn: aws.String(tg.ARN), TargetGroupName: aws.String(tg.Name), Protocol: v2types.ProtocolEnum(tg.Protocol),
		Port: aws.Int32(tg.Port), VpcId: aws.String(tg.VPCID), TargetType: v2types.TargetTypeEnum(tg.TargetType),
		HealthCheckEnabled: aws.Bool(true), HealthCheckProtocol: v2types.ProtocolEnum(hc.Protocol), HealthCheckPort: aws.String(hc.Port),
		HealthCheckIntervalSeconds: aws.Int32(hc.IntervalSeconds), HealthCheckTimeoutSeconds: aws.Int32(hc.TimeoutSeconds),
		HealthyThresholdCount: aws.Int32(hc.HealthyThreshold), UnhealthyThresholdCount: aws.Int32(hc.UnhealthyThreshold),
		LoadBalancerArns: slices.Clone(tg.LoadBalancerARNs), IpAddressType: v2types.TargetGroupIpAddressTypeEnumIpv4,
	}
	if out.LoadBalancerArns == nil {
		out.LoadBalancerArns = []string{}
	}
	if hc.Path != "" {
		out.HealthCheckPath = aws.String(hc.Path)
	}
	if hc.Matcher != "" {
		out.Matcher = &v2types.Matcher{HttpCode: aws.String(hc.Matcher)}
	}
	return out
}

func applyHealthCheck(hc *cloud.TGHealthCheck, proto v2types.ProtocolEnum, port, path *string, interval, timeout, healthy, unhealthy *int32, matcher *v2types.Matcher) {
	if matcher != nil && matcher.HttpCode != nil {
		hc.Matcher = *matcher.HttpCode
	}
	if proto != "" {
		hc.Protocol = string(proto)
	}
	if port != nil {
		hc.Port = *port
	}
	if path != nil {
		hc.Path = *path
	}
	if interval != nil {
		hc.IntervalSeconds = *interval
	}
	if timeout != nil {
		hc.TimeoutSeconds = *timeout
	}
	if healthy != nil {
		hc.HealthyThreshold = *healthy
	}
	if unhealthy != nil {
		hc.UnhealthyThreshold = *unhealthy
	}
}

func (h *Handler) v2CreateTargetGroup(ctx context.Context, in *elbv2.CreateTargetGroupInput) (*elbv2.CreateTargetGroupOutput, error) {
	tags, err := v2TagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	tg := cloud.TargetGroup{Name: aws.ToString(in.Name), Protocol: string(in.Protocol), Port: aws.ToInt32(in.Port), TargetType: string(in.TargetType), Tags: tags}
	applyHealthCheck(&tg.HealthCheck, in.HealthCheckProtocol, in.HealthCheckPort, in.HealthCheckPath, in.HealthCheckIntervalSeconds,
		in.HealthCheckTimeoutSeconds, in.HealthyThresholdCount, in.UnhealthyThresholdCount, in.Matcher)
	got, err := h.cfg.Cloud.CreateTargetGroup(ctx, tg)
	if err != nil {
		return nil, err
	}
	return &elbv2.CreateTargetGroupOutput{TargetGroups: []v2types.TargetGroup{toV2TG(got)}}, nil
}

func (h *Handler) v2DescribeTargetGroups(ctx context.Context, in *elbv2.DescribeTargetGroupsInput) (*elbv2.DescribeTargetGroupsOutput, error) {
	tgs, err := h.cfg.Cloud.DescribeTargetGroups(ctx, in.TargetGroupArns, aws.ToString(in.LoadBalancerArn), in.Names)
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeTargetGroupsOutput{TargetGroups: []v2types.TargetGroup{}}
	for _, tg := range tgs {
		out.TargetGroups = append(out.TargetGroups, toV2TG(tg))
	}
	return out, nil
}

func (h *Handler) v2ModifyTargetGroup(ctx context.Context, in *elbv2.ModifyTargetGroupInput) (*elbv2.ModifyTargetGroupOutput, error) {
	tg, err := h.cfg.Cloud.ModifyTargetGroup(ctx, aws.ToString(in.TargetGroupArn), func(hc *cloud.TGHealthCheck) {
		applyHealthCheck(hc, in.HealthCheckProtocol, in.HealthCheckPort, in.HealthCheckPath, in.HealthCheckIntervalSeconds,
			in.HealthCheckTimeoutSeconds, in.HealthyThresholdCount, in.UnhealthyThresholdCount, in.Matcher)
	})
	if err != nil {
		return nil, err
	}
	return &elbv2.ModifyTargetGroupOutput{TargetGroups: []v2types.TargetGroup{toV2TG(tg)}}, nil
}

func (h *Handler) v2DeleteTargetGroup(ctx context.Context, in *elbv2.DeleteTargetGroupInput) (*elbv2.DeleteTargetGroupOutput, error) {
	return &elbv2.DeleteTargetGroupOutput{}, h.cfg.Cloud.DeleteTargetGroup(ctx, aws.ToString(in.TargetGroupArn))
}

func (h *Handler) v2DescribeTGAttributes(ctx context.Context, in *elbv2.DescribeTargetGroupAttributesInput) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
	m, err := h.cfg.Cloud.TargetGroupAttributes(ctx, aws.ToString(in.TargetGroupArn), nil)
	if err != nil {
		return nil, err
	}
	return &elbv2.DescribeTargetGroupAttributesOutput{Attributes: tgAttrs(m)}, nil
}

func (h *Handler) v2ModifyTGAttributes(ctx context.Context, in *elbv2.ModifyTargetGroupAttributesInput) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
	set := map[string]string{}
	for _, a := range in.Attributes {
		set[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	m, err := h.cfg.Cloud.TargetGroupAttributes(ctx, aws.ToString(in.TargetGroupArn), set)
	if err != nil {
		return nil, err
	}
	return &elbv2.ModifyTargetGroupAttributesOutput{Attributes: tgAttrs(m)}, nil
}

func targets(ts []v2types.TargetDescription) []cloud.TGTarget {
	out := make([]cloud.TGTarget, len(ts))
	for i, t := range ts {
		out[i] = cloud.TGTarget{ID: aws.ToString(t.Id), Port: aws.ToInt32(t.Port)}
	}
	return out
}

func (h *Handler) v2RegisterTargets(ctx context.Context, in *elbv2.RegisterTargetsInput) (*elbv2.RegisterTargetsOutput, error) {
	return &elbv2.RegisterTargetsOutput{}, h.cfg.Cloud.RegisterTGTargets(ctx, aws.ToString(in.TargetGroupArn), targets(in.Targets))
}

func (h *Handler) v2DeregisterTargets(ctx context.Context, in *elbv2.DeregisterTargetsInput) (*elbv2.DeregisterTargetsOutput, error) {
	return &elbv2.DeregisterTargetsOutput{}, h.cfg.Cloud.DeregisterTGTargets(ctx, aws.ToString(in.TargetGroupArn), targets(in.Targets))
}

func (h *Handler) v2DescribeTargetHealth(ctx context.Context, in *elbv2.DescribeTargetHealthInput) (*elbv2.DescribeTargetHealthOutput, error) {
	hs, err := h.cfg.Cloud.DescribeTargetHealth(ctx, aws.ToString(in.TargetGroupArn))
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeTargetHealthOutput{TargetHealthDescriptions: []v2types.TargetHealthDescription{}}
	for _, t := range hs {
		th := &v2types.TargetHealth{State: v2types.TargetHealthStateEnum(t.State)}
		if t.Reason != "" {
			th.Reason = v2types.TargetHealthReasonEnum(t.Reason)
			th.Description = aws.String(t.Description)
		}
		out.TargetHealthDescriptions = append(out.TargetHealthDescriptions, v2types.TargetHealthDescription{
			Target: &v2types.TargetDescription{Id: aws.String(t.ID), Port: aws.Int32(t.Port)}, HealthCheckPort: aws.String(t.HealthCheckPort), TargetHealth: th})
	}
	return out, nil
}

func toV2Listener(l cloud.NLBListener) v2types.Listener {
	return v2types.Listener{ListenerArn: aws.String(l.ARN), LoadBalancerArn: aws.String(l.LBARN), Port: aws.Int32(l.Port), Protocol: v2types.ProtocolEnum(l.Protocol),
		DefaultActions: forwardActions(l.TargetGroupARN)}
}

// forwardActions is a forward to one target group as ELBv2 describes it:
// the target group's ARN and the same as a ForwardConfig of weight 1
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html:
// "If you specify both TargetGroupArn and ForwardConfig, you can specify
// only one target group using ForwardConfig").
func forwardActions(tg string) []v2types.Action {
	return []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tg),
		ForwardConfig: &v2types.ForwardActionConfig{
			TargetGroups:                []v2types.TargetGroupTuple{{TargetGroupArn: aws.String(tg), Weight: aws.Int32(1)}},
			TargetGroupStickinessConfig: &v2types.TargetGroupStickinessConfig{Enabled: aws.Bool(false)},
		}}}
}

// forwardTo is the target group a forward action sends to: TargetGroupArn,
// or the one target group of its ForwardConfig (the lab's listeners
// forward to one).
func forwardTo(as []v2types.Action) string {
	for _, a := range as {
		if a.Type != v2types.ActionTypeEnumForward {
			continue
		}
		if a.TargetGroupArn != nil {
			return *a.TargetGroupArn
		}
		if a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) > 0 {
			return aws.ToString(a.ForwardConfig.TargetGroups[0].TargetGroupArn)
		}
	}
	return ""
}

func (h *Handler) v2CreateListener(ctx context.Context, in *elbv2.CreateListenerInput) (*elbv2.CreateListenerOutput, error) {
	tags, err := v2TagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	l, err := h.cfg.Cloud.CreateListener(ctx, cloud.NLBListener{LBARN: aws.ToString(in.LoadBalancerArn), Protocol: string(in.Protocol), Port: aws.ToInt32(in.Port), TargetGroupARN: forwardTo(in.DefaultActions), Tags: tags})
	if err != nil {
		return nil, err
	}
	return &elbv2.CreateListenerOutput{Listeners: []v2types.Listener{toV2Listener(l)}}, nil
}

func (h *Handler) v2DescribeListeners(ctx context.Context, in *elbv2.DescribeListenersInput) (*elbv2.DescribeListenersOutput, error) {
	ls, err := h.cfg.Cloud.DescribeListeners(ctx, aws.ToString(in.LoadBalancerArn), in.ListenerArns)
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeListenersOutput{Listeners: []v2types.Listener{}}
	for _, l := range ls {
		out.Listeners = append(out.Listeners, toV2Listener(l))
	}
	return out, nil
}

func (h *Handler) v2ModifyListener(ctx context.Context, in *elbv2.ModifyListenerInput) (*elbv2.ModifyListenerOutput, error) {
	l, err := h.cfg.Cloud.ModifyListener(ctx, aws.ToString(in.ListenerArn), func(l *cloud.NLBListener) {
		if in.Port != nil {
			l.Port = *in.Port
		}
		if in.Protocol != "" {
			l.Protocol = string(in.Protocol)
		}
		if tg := forwardTo(in.DefaultActions); tg != "" {
			l.TargetGroupARN = tg
		}
	})
	if err != nil {
		return nil, err
	}
	return &elbv2.ModifyListenerOutput{Listeners: []v2types.Listener{toV2Listener(l)}}, nil
}

func (h *Handler) v2DeleteListener(ctx context.Context, in *elbv2.DeleteListenerInput) (*elbv2.DeleteListenerOutput, error) {
	return &elbv2.DeleteListenerOutput{}, h.cfg.Cloud.DeleteListener(ctx, aws.ToString(in.ListenerArn))
}

func (h *Handler) v2AddTags(ctx context.Context, in *elbv2.AddTagsInput) (*elbv2.AddTagsOutput, error) {
	tags, err := v2TagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	_, err = h.cfg.Cloud.ELBv2Tags(ctx, in.ResourceArns, tags)
	return &elbv2.AddTagsOutput{}, err
}

func (h *Handler) v2DescribeTags(ctx context.Context, in *elbv2.DescribeTagsInput) (*elbv2.DescribeTagsOutput, error) {
	tags, err := h.cfg.Cloud.ELBv2Tags(ctx, in.ResourceArns, nil)
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeTagsOutput{TagDescriptions: []v2types.TagDescription{}}
	for _, a := range in.ResourceArns {
		out.TagDescriptions = append(out.TagDescriptions, v2types.TagDescription{ResourceArn: aws.String(a), Tags: v2Tags(tags[a])})
	}
	return out, nil
}

func (h *Handler) v2DescribeListenerAttributes(ctx context.Context, in *elbv2.DescribeListenerAttributesInput) (*elbv2.DescribeListenerAttributesOutput, error) {
	attrs, err := h.cfg.Cloud.DescribeListenerAttributes(ctx, aws.ToString(in.ListenerArn))
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeListenerAttributesOutput{Attributes: []v2types.ListenerAttribute{}}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		out.Attributes = append(out.Attributes, v2types.ListenerAttribute{Key: aws.String(k), Value: aws.String(attrs[k])})
	}
	return out, nil
}

func (h *Handler) v2DescribeRules(ctx context.Context, in *elbv2.DescribeRulesInput) (*elbv2.DescribeRulesOutput, error) {
	rules, err := h.cfg.Cloud.DescribeRules(ctx, aws.ToString(in.ListenerArn), in.RuleArns)
	if err != nil {
		return nil, err
	}
	out := &elbv2.DescribeRulesOutput{Rules: []v2types.Rule{}}
	for _, r := range rules {
		out.Rules = append(out.Rules, v2types.Rule{RuleArn: aws.String(r.ARN), Priority: aws.String("default"), IsDefault: aws.Bool(true),
			Conditions: []v2types.RuleCondition{}, Actions: forwardActions(r.TargetGroupARN)})
	}
	return out, nil
}
