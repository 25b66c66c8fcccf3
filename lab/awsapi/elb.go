package awsapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func (h *Handler) elbActions() []Action {
	return []Action{
		act(h.elbDescribeLoadBalancers),
		act(h.elbCreateLoadBalancer),
		act(h.elbDeleteLoadBalancer),
		act(h.elbDescribeAttributes),
		act(h.elbModifyAttributes),
		act(h.elbConfigureHealthCheck),
		act(h.elbRegisterInstances),
		act(h.elbDeregisterInstances),
		act(h.elbCreateListeners),
		act(h.elbDeleteListeners),
		act(h.elbApplySecurityGroups),
		act(h.elbAttachSubnets),
		act(h.elbDetachSubnets),
		act(h.elbAddTags),
		act(h.elbDescribeTags),
		act(h.elbCreatePolicy),
		act(h.elbSetBackendPolicies),
		act(h.elbDescribeInstanceHealth),
	}
}

func elbTags(m map[string]string) []elbtypes.Tag {
	out := []elbtypes.Tag{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func elbTagMap(ts []elbtypes.Tag) (map[string]string, error) {
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

// elbTagRe is the pattern of an ELB or ELBv2 tag's key and value, and
// the lengths their limits (Elastic Load Balancing API Reference, Tag, of
// both API versions): refused before the cloud sees them.
var elbTagRe = regexp.MustCompile(`^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$`)

func checkELBTag(i int, key, value string) error {
	for _, f := range []struct {
		name, v  string
		min, max int
	}{{"key", key, 1, 128}, {"value", value, 0, 256}} {
		if n := utf8.RuneCountInString(f.v); n < f.min || n > f.max {
			return &apiError{http.StatusBadRequest, "ValidationError", fmt.Sprintf(
				"1 validation error detected: Value at 'tags.%d.member.%s' failed to satisfy constraint: Member must have length between %d and %d", i, f.name, f.min, f.max)}
		}
		if !elbTagRe.MatchString(f.v) {
			return &apiError{http.StatusBadRequest, "ValidationError", fmt.Sprintf(
				"1 validation error detected: Value %q at 'tags.%d.member.%s' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", clip(f.v), i, f.name, elbTagRe)}
		}
	}
	return nil
}

func instances(ids []string) []elbtypes.Instance {
	out := make([]elbtypes.Instance, len(ids))
	for i, id := range ids {
		out[i] = elbtypes.Instance{InstanceId: aws.String(id)}
	}
	return out
}

func instanceIDs(is []elbtypes.Instance) []string {
	out := make([]string, len(is))
	for i, in := range is {
		out[i] = aws.ToString(in.InstanceId)
	}
	return out
}

func (h *Handler) elbDescribeLoadBalancers(ctx context.Context, in *elb.DescribeLoadBalancersInput) (*elb.DescribeLoadBalancersOutput, error) {
	lbs, err := h.cfg.Cloud.DescribeELBs(ctx, in.LoadBalancerNames)
	if err != nil {
		return nil, err
	}
	lbs, next, err := elbPage(lbs, in.PageSize, in.Marker)
	if err != nil {
		return nil, err
	}
	out := &elb.DescribeLoadBalancersOutput{LoadBalancerDescriptions: []elbtypes.LoadBalancerDescription{}, NextMarker: next}
	for _, lb := range lbs {
		created := lb.CreatedAt
		d := elbtypes.LoadBalancerDescription{
			LoadBalancerName: aws.String(lb.Name), DNSName: aws.String(lb.DNSName),
			CanonicalHostedZoneName: aws.String(lb.DNSName), CanonicalHostedZoneNameID: aws.String("Z14GRHDCWA56QT"),
			Scheme: aws.String(lb.Scheme), VPCId: aws.String(lb.VPCID), CreatedTime: &created,
			AvailabilityZones: slices.Clone(lb.Zones), Subnets: slices.Clone(lb.Subnets),
			SecurityGroups: slices.Clone(lb.SecurityGroups), Instances: instances(lb.Instances),
			HealthCheck: &elbtypes.HealthCheck{Target: aws.String(lb.HealthCheck.Target), Interval: aws.Int32(lb.HealthCheck.Interval),
				Timeout: aws.Int32(lb.HealthCheck.Timeout), HealthyThreshold: aws.Int32(lb.HealthCheck.HealthyThreshold),
				UnhealthyThreshold: aws.Int32(lb.HealthCheck.UnhealthyThreshold)},
			Policies:                  &elbtypes.Policies{AppCookieStickinessPolicies: []elbtypes.AppCookieStickinessPolicy{}, LBCookieStickinessPolicies: []elbtypes.LBCookieStickinessPolicy{}, OtherPolicies: []string{}},
			BackendServerDescriptions: backendDescriptions(lb.BackendPolicies),
			SourceSecurityGroup:       &elbtypes.SourceSecurityGroup{GroupName: aws.String("amazon-elb-sg"), OwnerAlias: aws.String("amazon-elb")},
		}
		for _, l := range lb.Listeners {
			el := elbtypes.Listener{Protocol: aws.String(l.Protocol), LoadBalancerPort: l.Port, InstanceProtocol: aws.String(l.InstanceProtocol), InstancePort: aws.Int32(l.InstancePort)}
			if l.SSLCertificateID != "" {
				el.SSLCertificateId = aws.String(l.SSLCertificateID)
			}
			d.ListenerDescriptions = append(d.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &el, PolicyNames: []string{}})
		}
		out.LoadBalancerDescriptions = append(out.LoadBalancerDescriptions, d)
	}
	return out, nil
}

// backendDescriptions lists the instance ports that have policies, as the
// provider reads them to keep proxy protocol in sync.
func backendDescriptions(m map[int32][]string) []elbtypes.BackendServerDescription {
	out := []elbtypes.BackendServerDescription{}
	for _, port := range slices.Sorted(maps.Keys(m)) {
		out = append(out, elbtypes.BackendServerDescription{InstancePort: aws.Int32(port), PolicyNames: slices.Clone(m[port])})
	}
	return out
}

func (h *Handler) elbCreatePolicy(ctx context.Context, in *elb.CreateLoadBalancerPolicyInput) (*elb.CreateLoadBalancerPolicyOutput, error) {
	p := cloud.ELBPolicy{Name: aws.ToString(in.PolicyName), Type: aws.ToString(in.PolicyTypeName), Attributes: map[string]string{}}
	for _, a := range in.PolicyAttributes {
		p.Attributes[aws.ToString(a.AttributeName)] = aws.ToString(a.AttributeValue)
	}
	return &elb.CreateLoadBalancerPolicyOutput{}, h.cfg.Cloud.CreateELBPolicy(ctx, aws.ToString(in.LoadBalancerName), p)
}

func (h *Handler) elbSetBackendPolicies(ctx context.Context, in *elb.SetLoadBalancerPoliciesForBackendServerInput) (*elb.SetLoadBalancerPoliciesForBackendServerOutput, error) {
	return &elb.SetLoadBalancerPoliciesForBackendServerOutput{},
		h.cfg.Cloud.SetELBBackendPolicies(ctx, aws.ToString(in.LoadBalancerName), aws.ToInt32(in.InstancePort), in.PolicyNames)
}

func (h *Handler) elbDescribeInstanceHealth(ctx context.Context, in *elb.DescribeInstanceHealthInput) (*elb.DescribeInstanceHealthOutput, error) {
	hs, err := h.cfg.Cloud.DescribeELBInstanceHealth(ctx, aws.ToString(in.LoadBalancerName), instanceIDs(in.Instances))
	if err != nil {
		return nil, err
	}
	out := &elb.DescribeInstanceHealthOutput{InstanceStates: []elbtypes.InstanceState{}}
	for _, s := range hs {
		out.InstanceStates = append(out.InstanceStates, elbtypes.InstanceState{InstanceId: aws.String(s.InstanceID), State: aws.String(s.State),
			ReasonCode: aws.String(s.ReasonCode), Description: aws.String(s.Description)})
	}
	return out, nil
}

func fromELBListeners(ls []elbtypes.Listener) []cloud.ELBListener {
	out := make([]cloud.ELBListener, len(ls))
	for i, l := range ls {
		out[i] = cloud.ELBListener{Protocol: aws.ToString(l.Protocol), Port: l.LoadBalancerPort, InstanceProtocol: aws.ToString(l.InstanceProtocol),
			InstancePort: aws.ToInt32(l.InstancePort), SSLCertificateID: aws.ToString(l.SSLCertificateId)}
	}
	return out
}

func (h *Handler) elbCreateLoadBalancer(ctx context.Context, in *elb.CreateLoadBalancerInput) (*elb.CreateLoadBalancerOutput, error) {
	tags, err := elbTagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	dns, err := h.cfg.Cloud.CreateELB(ctx, cloud.CreateELBInput{
		Name: aws.ToString(in.LoadBalancerName), Listeners: fromELBListeners(in.Listeners), Subnets: in.Subnets,
		SecurityGroups: in.SecurityGroups, Scheme: aws.ToString(in.Scheme), Tags: tags,
	})
	if err != nil {
		return nil, err
	}
	return &elb.CreateLoadBalancerOutput{DNSName: aws.String(dns)}, nil
}

func (h *Handler) elbDeleteLoadBalancer(ctx context.Context, in *elb.DeleteLoadBalancerInput) (*elb.DeleteLoadBalancerOutput, error) {
	return &elb.DeleteLoadBalancerOutput{}, h.cfg.Cloud.DeleteELB(ctx, aws.ToString(in.LoadBalancerName))
}

func toELBAttributes(a cloud.ELBAttributes) *elbtypes.LoadBalancerAttributes {
	out := &elbtypes.LoadBalancerAttributes{
		CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: a.CrossZone},
		ConnectionDraining:     &elbtypes.ConnectionDraining{Enabled: a.ConnectionDraining, Timeout: aws.Int32(a.ConnectionDrainingTimeout)},
		ConnectionSettings:     &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(a.IdleTimeout)},
		AccessLog:              &elbtypes.AccessLog{Enabled: a.AccessLogEnabled},
		AdditionalAttributes:   []elbtypes.AdditionalAttribute{},
	}
	if a.AccessLogEnabled {
		out.AccessLog.S3BucketName = aws.String(a.AccessLogBucket)
		out.AccessLog.S3BucketPrefix = aws.String(a.AccessLogPrefix)
		out.AccessLog.EmitInterval = aws.Int32(a.AccessLogInterval)
	}
	return out
}

func (h *Handler) elbDescribeAttributes(ctx context.Context, in *elb.DescribeLoadBalancerAttributesInput) (*elb.DescribeLoadBalancerAttributesOutput, error) {
	a, err := h.cfg.Cloud.ELBAttributesOf(ctx, aws.ToString(in.LoadBalancerName))
	if err != nil {
		return nil, err
	}
	return &elb.DescribeLoadBalancerAttributesOutput{LoadBalancerAttributes: toELBAttributes(a)}, nil
}

func (h *Handler) elbModifyAttributes(ctx context.Context, in *elb.ModifyLoadBalancerAttributesInput) (*elb.ModifyLoadBalancerAttributesOutput, error) {
	set := in.LoadBalancerAttributes
	if set == nil {
		set = &elbtypes.LoadBalancerAttributes{}
	}
	a, err := h.cfg.Cloud.ELBModifyAttributes(ctx, aws.ToString(in.LoadBalancerName), func(a *cloud.ELBAttributes) {
		if s := set.CrossZoneLoadBalancing; s != nil {
			a.CrossZone = s.Enabled
		}
		if s := set.ConnectionDraining; s != nil {
			a.ConnectionDraining = s.Enabled
			if s.Timeout != nil {
				a.ConnectionDrainingTimeout = *s.Timeout
			}
		}
		if s := set.ConnectionSettings; s != nil && s.IdleTimeout != nil {
			a.IdleTimeout = *s.IdleTimeout
		}
		if s := set.AccessLog; s != nil {
			a.AccessLogEnabled = s.Enabled
			a.AccessLogBucket = aws.ToString(s.S3BucketName)
			a.AccessLogPrefix = aws.ToString(s.S3BucketPrefix)
			a.AccessLogInterval = aws.ToInt32(s.EmitInterval)
		}
	})
	if err != nil {
		return nil, err
	}
	return &elb.ModifyLoadBalancerAttributesOutput{LoadBalancerName: in.LoadBalancerName, LoadBalancerAttributes: toELBAttributes(a)}, nil
}

func (h *Handler) elbConfigureHealthCheck(ctx context.Context, in *elb.ConfigureHealthCheckInput) (*elb.ConfigureHealthCheckOutput, error) {
	hc := in.HealthCheck
	if hc == nil {
		return nil, &apiError{400, "ValidationError", "HealthCheck is required"}
	}
	err := h.cfg.Cloud.ELBConfigureHealthCheck(ctx, aws.ToString(in.LoadBalancerName), cloud.ELBHealthCheck{
		Target: aws.ToString(hc.Target), Interval: aws.ToInt32(hc.Interval), Timeout: aws.ToInt32(hc.Timeout),
		HealthyThreshold: aws.ToInt32(hc.HealthyThreshold), UnhealthyThreshold: aws.ToInt32(hc.UnhealthyThreshold),
	})
	if err != nil {
		return nil, err
	}
	return &elb.ConfigureHealthCheckOutput{HealthCheck: hc}, nil
}

func (h *Handler) elbRegisterInstances(ctx context.Context, in *elb.RegisterInstancesWithLoadBalancerInput) (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
	ids, err := h.cfg.Cloud.ELBRegisterInstances(ctx, aws.ToString(in.LoadBalancerName), instanceIDs(in.Instances))
	if err != nil {
		return nil, err
	}
	return &elb.RegisterInstancesWithLoadBalancerOutput{Instances: instances(ids)}, nil
}

func (h *Handler) elbDeregisterInstances(ctx context.Context, in *elb.DeregisterInstancesFromLoadBalancerInput) (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
	ids, err := h.cfg.Cloud.ELBDeregisterInstances(ctx, aws.ToString(in.LoadBalancerName), instanceIDs(in.Instances))
	if err != nil {
		return nil, err
	}
	return &elb.DeregisterInstancesFromLoadBalancerOutput{Instances: instances(ids)}, nil
}

func (h *Handler) elbCreateListeners(ctx context.Context, in *elb.CreateLoadBalancerListenersInput) (*elb.CreateLoadBalancerListenersOutput, error) {
	return &elb.CreateLoadBalancerListenersOutput{}, h.cfg.Cloud.ELBCreateListeners(ctx, aws.ToString(in.LoadBalancerName), fromELBListeners(in.Listeners))
}

func (h *Handler) elbDeleteListeners(ctx context.Context, in *elb.DeleteLoadBalancerListenersInput) (*elb.DeleteLoadBalancerListenersOutput, error) {
	return &elb.DeleteLoadBalancerListenersOutput{}, h.cfg.Cloud.ELBDeleteListeners(ctx, aws.ToString(in.LoadBalancerName), in.LoadBalancerPorts)
}

func (h *Handler) elbApplySecurityGroups(ctx context.Context, in *elb.ApplySecurityGroupsToLoadBalancerInput) (*elb.ApplySecurityGroupsToLoadBalancerOutput, error) {
	if err := h.cfg.Cloud.ELBApplySecurityGroups(ctx, aws.ToString(in.LoadBalancerName), in.SecurityGroups); err != nil {
		return nil, err
	}
	return &elb.ApplySecurityGroupsToLoadBalancerOutput{SecurityGroups: in.SecurityGroups}, nil
}

func (h *Handler) elbAttachSubnets(ctx context.Context, in *elb.AttachLoadBalancerToSubnetsInput) (*elb.AttachLoadBalancerToSubnetsOutput, error) {
	s, err := h.cfg.Cloud.ELBAttachSubnets(ctx, aws.ToString(in.LoadBalancerName), in.Subnets)
	if err != nil {
		return nil, err
	}
	return &elb.AttachLoadBalancerToSubnetsOutput{Subnets: s}, nil
}

func (h *Handler) elbDetachSubnets(ctx context.Context, in *elb.DetachLoadBalancerFromSubnetsInput) (*elb.DetachLoadBalancerFromSubnetsOutput, error) {
	s, err := h.cfg.Cloud.ELBDetachSubnets(ctx, aws.ToString(in.LoadBalancerName), in.Subnets)
	if err != nil {
		return nil, err
	}
	return &elb.DetachLoadBalancerFromSubnetsOutput{Subnets: s}, nil
}

func (h *Handler) elbAddTags(ctx context.Context, in *elb.AddTagsInput) (*elb.AddTagsOutput, error) {
	tags, err := elbTagMap(in.Tags)
	if err != nil {
		return nil, err
	}
	return &elb.AddTagsOutput{}, h.cfg.Cloud.ELBAddTags(ctx, in.LoadBalancerNames, tags)
}

func (h *Handler) elbDescribeTags(ctx context.Context, in *elb.DescribeTagsInput) (*elb.DescribeTagsOutput, error) {
	tags, err := h.cfg.Cloud.ELBTags(ctx, in.LoadBalancerNames)
	if err != nil {
		return nil, err
	}
	out := &elb.DescribeTagsOutput{TagDescriptions: []elbtypes.TagDescription{}}
	for _, n := range in.LoadBalancerNames {
		out.TagDescriptions = append(out.TagDescriptions, elbtypes.TagDescription{LoadBalancerName: aws.String(n), Tags: elbTags(tags[n])})
	}
	return out, nil
}

// elbPageSize bounds a Classic ELB DescribeLoadBalancers page: PageSize
// is 1-400 and 400 when not given, and NextMarker, while more is left,
// is what the next call passes as Marker
// (https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeLoadBalancers.html).
const elbPageSize = 400

// elbPage cuts a DescribeLoadBalancers answer as ELB pages it: unlike
// EC2's MaxResults, an absent PageSize still pages (by 400). The marker
// is the lab's own token (page's); out of range or not the lab's is a
// ValidationError, ELB's code for a parameter it refuses.
func elbPage[T any](items []T, pageSize *int32, marker *string) ([]T, *string, error) {
	size := aws.ToInt32(pageSize)
	if pageSize == nil {
		size = elbPageSize
	}
	if size < 1 || size > elbPageSize {
		return nil, nil, &apiError{400, "ValidationError", fmt.Sprintf("Value '%d' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and %d", size, elbPageSize)}
	}
	out, next, err := page(items, &size, marker, 1, elbPageSize)
	if ae := (*apiError)(nil); errors.As(err, &ae) { // only the marker can be wrong here
		return nil, nil, &apiError{400, "ValidationError", fmt.Sprintf("Invalid Marker %q", clip(aws.ToString(marker)))}
	}
	return out, next, err
}
