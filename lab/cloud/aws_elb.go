package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ClassicELB is an Elastic Load Balancing (classic) load balancer, what the
// AWS provider creates for a Service of type LoadBalancer without the nlb
// annotation.
type ClassicELB struct {
	Name           string            `json:"name"`
	DNSName        string            `json:"dnsName"`
	Scheme         string            `json:"scheme"`
	VPCID          string            `json:"vpcID"`
	Listeners      []ELBListener     `json:"listeners"`
	HealthCheck    ELBHealthCheck    `json:"healthCheck"`
	Instances      []string          `json:"instances"`
	Subnets        []string          `json:"subnets"`
	Zones          []string          `json:"zones"`
	SecurityGroups []string          `json:"securityGroups"`
	Attributes     ELBAttributes     `json:"attributes"`
	Tags           map[string]string `json:"tags,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	// Policies are the load balancer's policies (CreateLoadBalancerPolicy);
	// BackendPolicies names the ones applied to an instance port
	// (SetLoadBalancerPoliciesForBackendServer). The AWS provider puts a
	// ProxyProtocolPolicyType policy on every NodePort for the
	// proxy-protocol annotation.
	Policies        []ELBPolicy        `json:"policies,omitempty"`
	BackendPolicies map[int32][]string `json:"backendPolicies,omitempty"`
}

// ELBPolicy is a classic load balancer policy.
type ELBPolicy struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// ELBListener maps a load balancer port to an instance port (the Service's
// NodePort).
type ELBListener struct {
	Protocol         string `json:"protocol"`
	Port             int32  `json:"port"`
	InstanceProtocol string `json:"instanceProtocol"`
	InstancePort     int32  `json:"instancePort"`
	SSLCertificateID string `json:"sslCertificateID,omitempty"`
}

// ELBHealthCheck is a classic health check; Target is "TCP:31234" or
// "HTTP:10256/healthz".
type ELBHealthCheck struct {
	Target             string `json:"target"`
	Interval           int32  `json:"interval"`
	Timeout            int32  `json:"timeout"`
	HealthyThreshold   int32  `json:"healthyThreshold"`
	UnhealthyThreshold int32  `json:"unhealthyThreshold"`
}

// ELBAttributes are the classic load balancer's attributes.
type ELBAttributes struct {
	CrossZone                 bool   `json:"crossZone"`
	ConnectionDraining        bool   `json:"connectionDraining"`
	ConnectionDrainingTimeout int32  `json:"connectionDrainingTimeout"`
	IdleTimeout               int32  `json:"idleTimeout"`
	AccessLogEnabled          bool   `json:"accessLogEnabled"`
	AccessLogBucket           string `json:"accessLogBucket,omitempty"`
	AccessLogPrefix           string `json:"accessLogPrefix,omitempty"`
	AccessLogInterval         int32  `json:"accessLogInterval,omitempty"`
}

func (lb *ClassicELB) clone() ClassicELB {
	out := *lb
	out.Listeners = slices.Clone(lb.Listeners)
	out.Instances = slices.Clone(lb.Instances)
	out.Subnets = slices.Clone(lb.Subnets)
	out.Zones = slices.Clone(lb.Zones)
	out.SecurityGroups = slices.Clone(lb.SecurityGroups)
	out.Tags = cloneTags(lb.Tags)
	out.Policies = slices.Clone(lb.Policies)
	for i, p := range out.Policies {
		out.Policies[i].Attributes = maps.Clone(p.Attributes)
	}
	if lb.BackendPolicies != nil {
		out.BackendPolicies = make(map[int32][]string, len(lb.BackendPolicies))
		for port, names := range lb.BackendPolicies {
			out.BackendPolicies[port] = slices.Clone(names)
		}
	}
	return out
}

// CreateELBInput is CreateLoadBalancer of the classic API.
type CreateELBInput struct {
	Name           string
	Listeners      []ELBListener
	Subnets        []string
	SecurityGroups []string
	Scheme         string // internet-facing (default) or internal
	Tags           map[string]string
}

// CreateELB creates a classic load balancer; a second call with the same
// name and listeners returns the existing one (AWS's idempotency), with
// other listeners it fails with DuplicateLoadBalancerName.
func (c *Cloud) CreateELB(ctx context.Context, in CreateELBInput) (string, error) {
	var dns string
	req := fmt.Sprintf("name=%s listeners=%s subnets=%s groups=%s", in.Name, summarizeELBListeners(in.Listeners), summarize(in.Subnets), summarize(in.SecurityGroups))
	err := c.awsCall(ctx, ServiceELB, ActionCreateLoadBalancer, req, []string{in.Name}, func(emit emitFunc) (string, error) {
		if err := validateLBName(in.Name); err != nil {
			return "", err
		}
		if len(in.Listeners) == 0 {
			return "", errorf(ErrValidation, "At least one listener is required")
		}
		ls, err := normalizeELBListeners(in.Listeners)
		if err != nil {
			return "", err
		}
		if err := c.checkELBListeners(in.Name, 0, len(ls)); err != nil {
			return "", err
		}
		scheme := in.Scheme
		if scheme == "" {
			scheme = SchemeInternetFacing
		}
		if scheme != SchemeInternetFacing && scheme != SchemeInternal {
			return "", errorf(ErrValidation, "Scheme '%s' must be one of [internet-facing, internal]", scheme)
		}
		if err := validateTags(in.Tags); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if old, ok := c.aws.elbs[in.Name]; ok {
			if slices.Equal(old.Listeners, ls) {
				dns = old.DNSName
				return "exists: " + dns, nil
			}
			return "", errorf(ErrDuplicateLB, "Load balancer name '%s' already exists with different listeners", in.Name)
		}
		if q := c.cfg.Quotas.ClassicLoadBalancers; len(c.aws.elbs) >= q {
			return "", quotaError(ErrTooManyLoadBalancers, descClassicTooManyLBs, fmt.Sprintf("this lab allows %d Classic Load Balancers (AWS's default quota per Region)", q),
				fmt.Sprintf("%d exist", len(c.aws.elbs)), "Delete one (or its Service) first.")
		}
		if err := c.checkSocketsLocked(ErrTooManyLoadBalancers, descClassicTooManyLBs, 0, len(ls)); err != nil {
			return "", err
		}
		zones, err := c.subnetZonesLocked(in.Subnets)
		if err != nil {
			return "", err
		}
		if err := c.groupsExistLocked(in.SecurityGroups); err != nil {
			return "", err
		}
		lb := &ClassicELB{
			Name: in.Name, Scheme: scheme, VPCID: c.aws.net.VPCID, Listeners: ls,
			Subnets: slices.Clone(in.Subnets), Zones: zones, SecurityGroups: slices.Clone(in.SecurityGroups),
			HealthCheck: ELBHealthCheck{Target: "TCP:" + fmt.Sprint(ls[0].InstancePort), Interval: 30, Timeout: 5, HealthyThreshold: 10, UnhealthyThreshold: 2},
			Attributes:  ELBAttributes{ConnectionDrainingTimeout: 300, IdleTimeout: 60},
			Tags:        cloneTags(in.Tags), CreatedAt: c.now(),
		}
		prefix := ""
		if scheme == SchemeInternal {
			prefix = "internal-"
		}
		lb.DNSName = fmt.Sprintf("%s%s-%010d.%s.elb.amazonaws.com", prefix, strings.ToLower(in.Name), randDigits(), c.cfg.Region)
		c.aws.elbs[in.Name] = lb
		dns = lb.DNSName
		emit(EventELB, in.Name)
		return dns, nil
	})
	return dns, err
}

// checkELBListeners applies the listeners-per-Classic-Load-Balancer quota.
// The Classic API reference documents no code of its own for it: the lab
// answers InvalidConfigurationRequest, which CreateLoadBalancer and
// CreateLoadBalancerListeners document for a configuration they refuse.
func (c *Cloud) checkELBListeners(name string, have, add int) error {
	if q := c.cfg.Quotas.ClassicListenersPerELB; have+add > q {
		return quotaError(ErrInvalidConfiguration, descInvalidConfig, fmt.Sprintf("this lab allows %d listeners per Classic Load Balancer (AWS's default quota)", q),
			fmt.Sprintf("'%s' would have %d", name, have+add), "Give the Service fewer ports.")
	}
	return nil
}

// EventELB is published when a classic or network load balancer (or one
// of its target groups or listeners) changes.
const EventELB = "elb"

func summarizeELBListeners(ls []ELBListener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s:%d->%s:%d", l.Protocol, l.Port, l.InstanceProtocol, l.InstancePort)
	}
	return summarize(parts)
}

func normalizeELBListeners(ls []ELBListener) ([]ELBListener, error) {
	out := make([]ELBListener, 0, len(ls))
	for _, l := range ls {
		l.Protocol = strings.ToUpper(l.Protocol)
		l.InstanceProtocol = strings.ToUpper(l.InstanceProtocol)
		if l.InstanceProtocol == "" {
			l.InstanceProtocol = l.Protocol
		}
		switch l.Protocol {
		case "TCP", "HTTP", "HTTPS", "SSL":
		default:
			return nil, errorf(ErrValidation, "Invalid protocol '%s': want TCP, HTTP, HTTPS or SSL", l.Protocol)
		}
		if l.Port < 1 || l.Port > 65535 || l.InstancePort < 1 || l.InstancePort > 65535 {
			return nil, errorf(ErrValidation, "Listener ports must be between 1 and 65535 (got %d->%d)", l.Port, l.InstancePort)
		}
		if slices.ContainsFunc(out, func(o ELBListener) bool { return o.Port == l.Port }) {
			return nil, errorf(ErrDuplicateListener, "A listener already exists for port %d", l.Port)
		}
		out = append(out, l)
	}
	return out, nil
}

func (c *Cloud) subnetZonesLocked(ids []string) ([]string, error) {
	var zones []string
	for _, id := range ids {
		i := slices.IndexFunc(c.aws.net.Subnets, func(s AWSSubnet) bool { return s.ID == id })
		if i < 0 {
			return nil, errorf("SubnetNotFound", "The subnet '%s' does not exist", id)
		}
		zones = append(zones, c.aws.net.Subnets[i].Zone)
	}
	return zones, nil
}

func (c *Cloud) groupsExistLocked(ids []string) error {
	for _, id := range ids {
		if _, ok := c.aws.groups[id]; !ok {
			return errorf("InvalidSecurityGroup", "The security group '%s' does not exist", id)
		}
	}
	return nil
}

// DescribeELBs returns the named classic load balancers (all when none are
// named); an unknown name fails the call with LoadBalancerNotFound.
func (c *Cloud) DescribeELBs(ctx context.Context, names []string) ([]ClassicELB, error) {
	var out []ClassicELB
	err := c.awsCall(ctx, ServiceELB, ActionDescribeLoadBalancers, "names="+summarize(names), names, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if len(names) == 0 {
			names = slices.Sorted(maps.Keys(c.aws.elbs))
		}
		for _, n := range names {
			lb, ok := c.aws.elbs[n]
			if !ok {
				return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", n)
			}
			out = append(out, lb.clone())
		}
		return fmt.Sprintf("%d load balancers", len(out)), nil
	})
	return out, err
}

// elbOp runs a mutation of one classic load balancer.
func (c *Cloud) elbOp(ctx context.Context, action, name, req string, fn func(lb *ClassicELB) (string, error)) error {
	return c.awsCall(ctx, ServiceELB, action, "name="+name+" "+req, []string{name}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, ok := c.aws.elbs[name]
		if !ok {
			return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", name)
		}
		res, err := fn(lb)
		if err == nil {
			emit(EventELB, name)
		}
		return res, err
	})
}

// ELBCreateListeners adds listeners; a port already used by a different
// listener fails with DuplicateListener.
func (c *Cloud) ELBCreateListeners(ctx context.Context, name string, ls []ELBListener) error {
	return c.elbOp(ctx, ActionCreateLoadBalancerListeners, name, "listeners="+summarizeELBListeners(ls), func(lb *ClassicELB) (string, error) {
		nls, err := normalizeELBListeners(ls)
		if err != nil {
			return "", err
		}
		for _, l := range nls {
			i := slices.IndexFunc(lb.Listeners, func(o ELBListener) bool { return o.Port == l.Port })
			if i >= 0 && lb.Listeners[i] != l {
				return "", errorf(ErrDuplicateListener, "A listener already exists for %s with LoadBalancerPort %d", name, l.Port)
			}
		}
		var add []ELBListener
		for _, l := range nls {
			if !slices.Contains(lb.Listeners, l) {
				add = append(add, l)
			}
		}
		if err := c.checkELBListeners(name, len(lb.Listeners), len(add)); err != nil {
			return "", err
		}
		if err := c.checkSocketsLocked(ErrInvalidConfiguration, descInvalidConfig, 0, len(add)); err != nil {
			return "", err
		}
		lb.Listeners = append(lb.Listeners, add...)
		return fmt.Sprintf("%d listeners", len(lb.Listeners)), nil
	})
}

// ELBDeleteListeners removes the listeners on the given ports.
func (c *Cloud) ELBDeleteListeners(ctx context.Context, name string, ports []int32) error {
	return c.elbOp(ctx, ActionDeleteLoadBalancerListeners, name, fmt.Sprintf("ports=%v", ports), func(lb *ClassicELB) (string, error) {
		lb.Listeners = slices.DeleteFunc(lb.Listeners, func(l ELBListener) bool { return slices.Contains(ports, l.Port) })
		return fmt.Sprintf("%d listeners", len(lb.Listeners)), nil
	})
}

// ELBConfigureHealthCheck replaces the health check.
func (c *Cloud) ELBConfigureHealthCheck(ctx context.Context, name string, hc ELBHealthCheck) error {
	return c.elbOp(ctx, ActionConfigureHealthCheck, name, "target="+hc.Target, func(lb *ClassicELB) (string, error) {
		proto, rest, ok := strings.Cut(hc.Target, ":")
		if !ok || rest == "" || !slices.Contains([]string{"TCP", "SSL", "HTTP", "HTTPS"}, strings.ToUpper(proto)) {
			return "", errorf(ErrValidation, "Invalid health check target '%s': want PROTOCOL:PORT[/PATH]", hc.Target)
		}
		if hc.Interval < 5 || hc.Interval > 300 || hc.Timeout < 2 || hc.Timeout > 60 || hc.Timeout >= hc.Interval ||
			hc.HealthyThreshold < 2 || hc.HealthyThreshold > 10 || hc.UnhealthyThreshold < 2 || hc.UnhealthyThreshold > 10 {
			return "", errorf(ErrValidation, "Health check interval 5-300s, timeout 2-60s and below the interval, thresholds 2-10 (got %+v)", hc)
		}
		lb.HealthCheck = hc
		return hc.Target, nil
	})
}

// ELBRegisterInstances adds instances; registering twice is a no-op.
func (c *Cloud) ELBRegisterInstances(ctx context.Context, name string, ids []string) ([]string, error) {
	var out []string
	err := c.elbOp(ctx, ActionRegisterInstancesWithLB, name, "instances="+summarize(ids), func(lb *ClassicELB) (string, error) {
		for _, id := range ids {
			if _, ok := c.instances[id]; !ok {
				return "", errorf("InvalidInstance", "The instance '%s' is not in a valid state or does not exist", id)
			}
		}
		for _, id := range ids {
			if !slices.Contains(lb.Instances, id) {
				lb.Instances = append(lb.Instances, id)
			}
		}
		slices.Sort(lb.Instances)
		out = slices.Clone(lb.Instances)
		return fmt.Sprintf("%d instances", len(lb.Instances)), nil
	})
	return out, err
}

// ELBDeregisterInstances removes instances; unknown ones are ignored.
func (c *Cloud) ELBDeregisterInstances(ctx context.Context, name string, ids []string) ([]string, error) {
	var out []string
	err := c.elbOp(ctx, ActionDeregisterInstancesFromLB, name, "instances="+summarize(ids), func(lb *ClassicELB) (string, error) {
		lb.Instances = slices.DeleteFunc(lb.Instances, func(id string) bool { return slices.Contains(ids, id) })
		out = slices.Clone(lb.Instances)
		return fmt.Sprintf("%d instances", len(lb.Instances)), nil
	})
	return out, err
}

// ELBAttributesOf returns a load balancer's attributes.
func (c *Cloud) ELBAttributesOf(ctx context.Context, name string) (ELBAttributes, error) {
	var out ELBAttributes
	err := c.awsCall(ctx, ServiceELB, ActionDescribeLoadBalancerAttributes, "name="+name, []string{name}, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		lb, ok := c.aws.elbs[name]
		if !ok {
			return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", name)
		}
		out = lb.Attributes
		return "ok", nil
	})
	return out, err
}

// ELBModifyAttributes applies fn to the attributes (the wire API sets only
// the attributes present in the request).
func (c *Cloud) ELBModifyAttributes(ctx context.Context, name string, fn func(*ELBAttributes)) (ELBAttributes, error) {
	var out ELBAttributes
	err := c.elbOp(ctx, ActionModifyLoadBalancerAttributes, name, "", func(lb *ClassicELB) (string, error) {
		a := lb.Attributes
		fn(&a)
		if a.IdleTimeout < 1 || a.IdleTimeout > 4000 {
			return "", errorf(ErrValidation, "Idle timeout %d must be between 1 and 4000 seconds", a.IdleTimeout)
		}
		if a.ConnectionDrainingTimeout < 1 || a.ConnectionDrainingTimeout > 3600 {
			return "", errorf(ErrValidation, "Connection draining timeout %d must be between 1 and 3600 seconds", a.ConnectionDrainingTimeout)
		}
		lb.Attributes = a
		out = a
		return fmt.Sprintf("%+v", a), nil
	})
	return out, err
}

// ELBApplySecurityGroups replaces the load balancer's groups.
func (c *Cloud) ELBApplySecurityGroups(ctx context.Context, name string, groups []string) error {
	return c.elbOp(ctx, ActionApplySecurityGroupsToLB, name, "groups="+summarize(groups), func(lb *ClassicELB) (string, error) {
		if err := c.groupsExistLocked(groups); err != nil {
			return "", err
		}
		lb.SecurityGroups = slices.Clone(groups)
		return summarize(groups), nil
	})
}

// ELBAttachSubnets adds subnets (and their zones).
func (c *Cloud) ELBAttachSubnets(ctx context.Context, name string, subnets []string) ([]string, error) {
	var out []string
	err := c.elbOp(ctx, ActionAttachLoadBalancerToSubnets, name, "subnets="+summarize(subnets), func(lb *ClassicELB) (string, error) {
		if _, err := c.subnetZonesLocked(subnets); err != nil {
			return "", err
		}
		for _, s := range subnets {
			if !slices.Contains(lb.Subnets, s) {
				lb.Subnets = append(lb.Subnets, s)
			}
		}
		lb.Zones, _ = c.subnetZonesLocked(lb.Subnets)
		out = slices.Clone(lb.Subnets)
		return summarize(out), nil
	})
	return out, err
}

// ELBDetachSubnets removes subnets; the last one cannot go.
func (c *Cloud) ELBDetachSubnets(ctx context.Context, name string, subnets []string) ([]string, error) {
	var out []string
	err := c.elbOp(ctx, ActionDetachLoadBalancerFromSubnets, name, "subnets="+summarize(subnets), func(lb *ClassicELB) (string, error) {
		left := slices.DeleteFunc(slices.Clone(lb.Subnets), func(s string) bool { return slices.Contains(subnets, s) })
		if len(left) == 0 {
			return "", errorf(ErrInvalidConfiguration, "A load balancer must stay attached to at least one subnet")
		}
		lb.Subnets = left
		lb.Zones, _ = c.subnetZonesLocked(lb.Subnets)
		out = slices.Clone(left)
		return summarize(out), nil
	})
	return out, err
}

// DeleteELB deletes a classic load balancer; deleting one that does not
// exist succeeds, as on AWS.
func (c *Cloud) DeleteELB(ctx context.Context, name string) error {
	return c.awsCall(ctx, ServiceELB, ActionDeleteLoadBalancer, "name="+name, []string{name}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.aws.elbs[name]; !ok {
			return "no such load balancer (ok)", nil
		}
		delete(c.aws.elbs, name)
		delete(c.aws.health, name)
		emit(EventELB, name)
		return "deleted " + name, nil
	})
}

// ELBAddTags tags classic load balancers.
func (c *Cloud) ELBAddTags(ctx context.Context, names []string, tags map[string]string) error {
	return c.awsCall(ctx, ServiceELB, ActionAddTags, "names="+summarize(names)+" tags="+summarizeTags(tags), names, func(emit emitFunc) (string, error) {
		if err := validateTags(tags); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range names {
			if _, ok := c.aws.elbs[n]; !ok {
				return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", n)
			}
		}
		for _, n := range names {
			lb := c.aws.elbs[n]
			if lb.Tags == nil {
				lb.Tags = map[string]string{}
			}
			maps.Copy(lb.Tags, tags)
			emit(EventELB, n)
		}
		return "ok", nil
	})
}

// ELBTags returns the tags of classic load balancers.
func (c *Cloud) ELBTags(ctx context.Context, names []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := c.awsCall(ctx, ServiceELB, ActionDescribeTags, "names="+summarize(names), names, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, n := range names {
			lb, ok := c.aws.elbs[n]
			if !ok {
				return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", n)
			}
			out[n] = cloneTags(lb.Tags)
		}
		return fmt.Sprintf("%d load balancers", len(out)), nil
	})
	return out, err
}
