package cloud

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NLB is an Elastic Load Balancing v2 network load balancer, what the AWS
// provider creates for service.beta.kubernetes.io/aws-load-balancer-type:
// nlb.
type NLB struct {
	ARN            string            `json:"arn"`
	Name           string            `json:"name"`
	DNSName        string            `json:"dnsName"`
	Scheme         string            `json:"scheme"`
	VPCID          string            `json:"vpcID"`
	Subnets        []string          `json:"subnets"`
	Zones          []string          `json:"zones"`
	SecurityGroups []string          `json:"securityGroups,omitempty"`
	IPAddressType  string            `json:"ipAddressType"`
	Attributes     map[string]string `json:"attributes"`
	Tags           map[string]string `json:"tags,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
}

// TargetGroup is an ELBv2 target group with its targets.
type TargetGroup struct {
	ARN              string            `json:"arn"`
	Name             string            `json:"name"`
	Protocol         string            `json:"protocol"`
	Port             int32             `json:"port"`
	VPCID            string            `json:"vpcID"`
	TargetType       string            `json:"targetType"`
	HealthCheck      TGHealthCheck     `json:"healthCheck"`
	LoadBalancerARNs []string          `json:"loadBalancerARNs"`
	Targets          []TGTarget        `json:"targets"`
	Attributes       map[string]string `json:"attributes"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// TGHealthCheck is a target group's health check.
type TGHealthCheck struct {
	Protocol           string `json:"protocol"`
	Port               string `json:"port"` // "traffic-port" or a number
	Path               string `json:"path,omitempty"`
	IntervalSeconds    int32  `json:"intervalSeconds"`
	TimeoutSeconds     int32  `json:"timeoutSeconds"`
	HealthyThreshold   int32  `json:"healthyThreshold"`
	UnhealthyThreshold int32  `json:"unhealthyThreshold"`
	// Matcher is the HTTP codes an HTTP or HTTPS check takes as healthy
	// (Matcher.HttpCode: "200", "200,202", "200-299"); "" on a TCP check.
	Matcher string `json:"matcher,omitempty"`
}

// DefaultNLBMatcher is an NLB's HTTP matcher when none is given; an NLB
// takes codes from 200 to 599 (the ELBv2 API reference, Matcher).
const DefaultNLBMatcher = "200-399"

// ParseMatcher reads Matcher.HttpCode as AWS documents it for Network Load
// Balancers: codes between 200 and 599, separated by commas, each a code
// or a range "lo-hi". It returns the ranges.
func ParseMatcher(m string) ([][2]int, error) {
	if m == "" {
		return nil, fmt.Errorf("the matcher is empty")
	}
	var out [][2]int
	for part := range strings.SplitSeq(m, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 200 || b > 599 || a > b {
			return nil, fmt.Errorf("'%s' is not an HTTP code or range between 200 and 599", part)
		}
		out = append(out, [2]int{a, b})
	}
	return out, nil
}

// validTGHealthCheck holds a target group's check to what AWS takes; the
// wording of the answer is the lab's.
func validTGHealthCheck(hc TGHealthCheck) error {
	switch hc.Protocol {
	case "HTTP", "HTTPS":
		if _, err := ParseMatcher(hc.Matcher); err != nil {
			return errorf(ErrValidation, "Health check matcher HTTP code: %v", err)
		}
	default:
		if hc.Matcher != "" {
			return errorf(ErrValidation, "A matcher applies to HTTP and HTTPS health checks only, not %s", hc.Protocol)
		}
	}
	return nil
}

// TGTarget is a registered target: an instance ID and a port.
type TGTarget struct {
	ID   string `json:"id"`
	Port int32  `json:"port"`
}

// NLBListener forwards a port of an NLB to a target group.
type NLBListener struct {
	ARN            string `json:"arn"`
	LBARN          string `json:"lbARN"`
	Protocol       string `json:"protocol"`
	Port           int32  `json:"port"`
	TargetGroupARN string `json:"targetGroupARN"`
	// Tags are the listener's, and RuleTags its default rule's (ELBv2
	// tags listeners and rules as it tags load balancers).
	Tags     map[string]string `json:"tags,omitempty"`
	RuleTags map[string]string `json:"ruleTags,omitempty"`
}

func (l NLBListener) clone() NLBListener {
	l.Tags, l.RuleTags = cloneTags(l.Tags), cloneTags(l.RuleTags)
	return l
}

// DefaultRuleARN is the ARN of the listener's default rule: every ELBv2
// listener has one (NLB listeners too: "You cannot delete the default
// rule", https://docs.aws.amazon.com/elasticloadbalancing/latest/network/delete-rule.html),
// its ARN the listener's with listener-rule/ and a rule ID.
func (l NLBListener) DefaultRuleARN() string {
	return strings.Replace(l.ARN, ":listener/", ":listener-rule/", 1) + "/" + ruleIDOf(l.ARN)
}

// ruleIDOf derives the default rule's 16-hex-digit ID from the listener's
// ARN, so it is stable without being stored.
func ruleIDOf(arn string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(arn); i++ {
		h ^= uint64(arn[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}

func (lb *NLB) clone() NLB {
	out := *lb
	out.Subnets = slices.Clone(lb.Subnets)
	out.Zones = slices.Clone(lb.Zones)
	out.SecurityGroups = slices.Clone(lb.SecurityGroups)
	out.Attributes = maps.Clone(lb.Attributes)
	out.Tags = cloneTags(lb.Tags)
	return out
}

func (tg *TargetGroup) clone() TargetGroup {
	out := *tg
	out.LoadBalancerARNs = slices.Clone(tg.LoadBalancerARNs)
	out.Targets = slices.Clone(tg.Targets)
	out.Attributes = maps.Clone(tg.Attributes)
	out.Tags = cloneTags(tg.Tags)
	return out
}

const awsAccount = "000000000000"

func (c *Cloud) arnLocked(kind, name string) string {
	return fmt.Sprintf("arn:aws:elasticloadbalancing:%s:%s:%s/%s/%016x", c.cfg.Region, awsAccount, kind, name, c.nextSeqLocked()*0x9e3779b97f4a7c15)
}

// sharedAddressSpace is RFC 6598's 100.64.0.0/10, which AWS accepts for
// ip targets beside RFC 1918.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

func notFoundLB(what string) error {
	return errorf(ErrLBNotFound, "Load balancer '%s' not found", what)
}

// CreateNLBInput is the ELBv2 CreateLoadBalancer of type network.
type CreateNLBInput struct {
	Name           string
	Subnets        []string
	SecurityGroups []string
	Scheme         string
	Type           string
	IPAddressType  string
	Tags           map[string]string
}

// CreateNLB creates a network load balancer; the same name again returns
// the existing one.
func (c *Cloud) CreateNLB(ctx context.Context, in CreateNLBInput) (NLB, error) {
	var out NLB
	err := c.awsCall(ctx, ServiceELBv2, ActionCreateLoadBalancer, fmt.Sprintf("name=%s subnets=%s", in.Name, summarize(in.Subnets)), []string{in.Name}, func(emit emitFunc) (string, error) {
		if err := validateLBName(in.Name); err != nil {
			return "", err
		}
		if in.Type != "" && in.Type != "network" {
			return "", errorf(ErrValidation, "The lab's ELBv2 makes network load balancers only, not '%s'", in.Type)
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
		for _, lb := range c.aws.nlbs {
			if lb.Name == in.Name {
				out = lb.clone()
				return "exists: " + lb.ARN, nil
			}
		}
		if q := c.cfg.Quotas.NetworkLoadBalancers; len(c.aws.nlbs) >= q {
			return "", quotaError(ErrTooManyLoadBalancers, descTooManyLBs, fmt.Sprintf("this lab allows %d Network Load Balancers (AWS's default quota per Region)", q),
				fmt.Sprintf("%d exist", len(c.aws.nlbs)), "Delete one (or its Service) first.")
		}
		zones, err := c.subnetZonesLocked(in.Subnets)
		if err != nil {
			return "", err
		}
		if len(zones) == 0 {
			return "", errorf(ErrValidation, "At least one subnet must be specified")
		}
		if err := c.groupsExistLocked(in.SecurityGroups); err != nil {
			return "", err
		}
		lb := &NLB{
			ARN: c.arnLocked("loadbalancer/net", in.Name), Name: in.Name, Scheme: scheme, VPCID: c.aws.net.VPCID,
			Subnets: slices.Clone(in.Subnets), Zones: zones, SecurityGroups: slices.Clone(in.SecurityGroups),
			IPAddressType: "ipv4",
			Attributes: map[string]string{
				"load_balancing.cross_zone.enabled": "false", "access_logs.s3.enabled": "false",
				"deletion_protection.enabled": "false",
			},
			Tags: cloneTags(in.Tags), CreatedAt: c.now(),
		}
		lb.DNSName = fmt.Sprintf("%s-%016x.elb.%s.amazonaws.com", strings.ToLower(in.Name), randDigits()*0x10001, c.cfg.Region)
		c.aws.nlbs[lb.ARN] = lb
		out = lb.clone()
		emit(EventELB, lb.ARN)
		return lb.ARN, nil
	})
	return out, err
}

// DescribeNLBs returns network load balancers by ARN or name (all when
// neither is given).
func (c *Cloud) DescribeNLBs(ctx context.Context, arns, names []string) ([]NLB, error) {
	var out []NLB
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeLoadBalancers, "arns="+summarize(arns)+" names="+summarize(names), append(slices.Clone(arns), names...), func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, a := range arns {
			lb, ok := c.aws.nlbs[a]
			if !ok {
				return "", notFoundLB(a)
			}
			out = append(out, lb.clone())
		}
		for _, n := range names {
			i := slices.IndexFunc(slices.Collect(maps.Values(c.aws.nlbs)), func(lb *NLB) bool { return lb.Name == n })
			if i < 0 {
				return "", notFoundLB(n)
			}
			for _, lb := range c.aws.nlbs {
				if lb.Name == n {
					out = append(out, lb.clone())
				}
			}
		}
		if len(arns) == 0 && len(names) == 0 {
			for _, a := range slices.Sorted(maps.Keys(c.aws.nlbs)) {
				out = append(out, c.aws.nlbs[a].clone())
			}
		}
		return fmt.Sprintf("%d load balancers", len(out)), nil
	})
	return out, err
}

// DeleteNLB deletes a network load balancer and its listeners.
func (c *Cloud) DeleteNLB(ctx context.Context, arn string) error {
	return c.awsCall(ctx, ServiceELBv2, ActionDeleteLoadBalancer, "arn="+arn, []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, ok := c.aws.nlbs[arn]
		if !ok {
			return "", notFoundLB(arn)
		}
		delete(c.aws.nlbs, arn)
		delete(c.aws.health, lb.Name)
		for a, l := range c.aws.lsns {
			if l.LBARN == arn {
				delete(c.aws.lsns, a)
			}
		}
		for _, tg := range c.aws.tgs {
			tg.LoadBalancerARNs = slices.DeleteFunc(tg.LoadBalancerARNs, func(s string) bool { return s == arn })
		}
		emit(EventELB, arn)
		return "deleted", nil
	})
}

// NLBAttributes returns (get) or merges and returns (set != nil) a network
// load balancer's attributes.
func (c *Cloud) NLBAttributes(ctx context.Context, arn string, set map[string]string) (map[string]string, error) {
	action := ActionDescribeLoadBalancerAttributes
	if set != nil {
		action = ActionModifyLoadBalancerAttributes
	}
	var out map[string]string
	err := c.awsCall(ctx, ServiceELBv2, action, "arn="+arn+" "+summarizeTags(set), []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, ok := c.aws.nlbs[arn]
		if !ok {
			return "", notFoundLB(arn)
		}
		if set != nil {
			maps.Copy(lb.Attributes, set)
			emit(EventELB, arn)
		}
		out = maps.Clone(lb.Attributes)
		return fmt.Sprintf("%d attributes", len(out)), nil
	})
	return out, err
}

// CreateTargetGroup creates a target group; the same name with the same
// settings returns the existing one.
func (c *Cloud) CreateTargetGroup(ctx context.Context, in TargetGroup) (TargetGroup, error) {
	var out TargetGroup
	err := c.awsCall(ctx, ServiceELBv2, ActionCreateTargetGroup, fmt.Sprintf("name=%s %s:%d", in.Name, in.Protocol, in.Port), []string{in.Name}, func(emit emitFunc) (string, error) {
		if err := validateLBName(in.Name); err != nil {
			return "", err
		}
		if in.Port < 1 || in.Port > 65535 {
			return "", errorf(ErrValidation, "Port %d must be between 1 and 65535", in.Port)
		}
		switch in.Protocol {
		case "TCP", "UDP", "TCP_UDP", "TLS":
		default:
			return "", errorf(ErrValidation, "Protocol '%s' must be one of [TCP, UDP, TCP_UDP, TLS]", in.Protocol)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, tg := range c.aws.tgs {
			if tg.Name == in.Name {
				if tg.Port != in.Port || tg.Protocol != in.Protocol {
					return "", errorf(ErrDuplicateTargetGroup, "A target group with the same name '%s' exists, but with different settings", in.Name)
				}
				out = tg.clone()
				return "exists: " + tg.ARN, nil
			}
		}
		if q := c.cfg.Quotas.TargetGroups; len(c.aws.tgs) >= q {
			return "", quotaError(ErrTooManyTargetGroups, descTooManyTGs, fmt.Sprintf("this lab allows %d target groups (AWS's default quota per Region is 3,000)", q),
				fmt.Sprintf("%d exist", len(c.aws.tgs)), "Delete target groups no listener uses first.")
		}
		tg := in.clone()
		tg.ARN = c.arnLocked("targetgroup", in.Name)
		tg.VPCID = c.aws.net.VPCID
		if tg.TargetType == "" {
			tg.TargetType = "instance"
		}
		if tg.HealthCheck.Protocol == "" {
			tg.HealthCheck.Protocol = "TCP"
		}
		if tg.HealthCheck.Port == "" {
			tg.HealthCheck.Port = "traffic-port"
		}
		if tg.HealthCheck.IntervalSeconds == 0 {
			tg.HealthCheck.IntervalSeconds = 30
		}
		if tg.HealthCheck.TimeoutSeconds == 0 {
			tg.HealthCheck.TimeoutSeconds = 10
		}
		if tg.HealthCheck.HealthyThreshold == 0 {
			tg.HealthCheck.HealthyThreshold = 3
		}
		if tg.HealthCheck.UnhealthyThreshold == 0 {
			tg.HealthCheck.UnhealthyThreshold = 3
		}
		if (tg.HealthCheck.Protocol == "HTTP" || tg.HealthCheck.Protocol == "HTTPS") && tg.HealthCheck.Matcher == "" {
			tg.HealthCheck.Matcher = DefaultNLBMatcher
		}
		if err := validTGHealthCheck(tg.HealthCheck); err != nil {
			return "", err
		}
		tg.Targets = nil
		tg.LoadBalancerARNs = nil
		if tg.TargetType != string(TargetTypeInstance) && tg.TargetType != string(TargetTypeIP) {
			return "", errorf(ErrValidation, "TargetType '%s' must be one of [instance, ip]", tg.TargetType)
		}
		// AWS's default: client IPs are kept for instance targets, and for
		// ip targets only over UDP and TCP_UDP.
		preserve := tg.TargetType == string(TargetTypeInstance) || tg.Protocol == "UDP" || tg.Protocol == "TCP_UDP"
		tg.Attributes = map[string]string{"deregistration_delay.timeout_seconds": "300", "proxy_protocol_v2.enabled": "false",
			"preserve_client_ip.enabled": strconv.FormatBool(preserve)}
		c.aws.tgs[tg.ARN] = &tg
		out = tg.clone()
		emit(EventELB, tg.ARN)
		return tg.ARN, nil
	})
	return out, err
}

// DescribeTargetGroups returns target groups by ARN, by load balancer, or
// all.
func (c *Cloud) DescribeTargetGroups(ctx context.Context, arns []string, lbARN string, names []string) ([]TargetGroup, error) {
	var out []TargetGroup
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeTargetGroups, "arns="+summarize(arns)+" lb="+lbARN, arns, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, a := range arns {
			if _, ok := c.aws.tgs[a]; !ok {
				return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", a)
			}
		}
		if lbARN != "" {
			if _, ok := c.aws.nlbs[lbARN]; !ok {
				return "", notFoundLB(lbARN)
			}
		}
		for _, a := range slices.Sorted(maps.Keys(c.aws.tgs)) {
			tg := c.aws.tgs[a]
			if len(arns) > 0 && !slices.Contains(arns, a) || lbARN != "" && !slices.Contains(tg.LoadBalancerARNs, lbARN) ||
				len(names) > 0 && !slices.Contains(names, tg.Name) {
				continue
			}
			out = append(out, tg.clone())
		}
		if len(names) > 0 && len(out) == 0 {
			return "", errorf(ErrTargetGroupNotFound, "One or more target groups not found")
		}
		return fmt.Sprintf("%d target groups", len(out)), nil
	})
	return out, err
}

// tgOp runs a mutation of one target group.
func (c *Cloud) tgOp(ctx context.Context, action, arn, req string, fn func(tg *TargetGroup) (string, error)) error {
	return c.awsCall(ctx, ServiceELBv2, action, "tg="+arn+" "+req, []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		tg, ok := c.aws.tgs[arn]
		if !ok {
			return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", arn)
		}
		res, err := fn(tg)
		if err == nil {
			emit(EventELB, arn)
		}
		return res, err
	})
}

// ModifyTargetGroup replaces the health check.
func (c *Cloud) ModifyTargetGroup(ctx context.Context, arn string, fn func(*TGHealthCheck)) (TargetGroup, error) {
	var out TargetGroup
	err := c.tgOp(ctx, ActionModifyTargetGroup, arn, "", func(tg *TargetGroup) (string, error) {
		hc := tg.HealthCheck
		fn(&hc)
		if (hc.Protocol == "HTTP" || hc.Protocol == "HTTPS") && hc.Matcher == "" {
			hc.Matcher = DefaultNLBMatcher
		}
		if hc.Protocol != "HTTP" && hc.Protocol != "HTTPS" && tg.HealthCheck.Matcher == hc.Matcher {
			hc.Matcher = "" // a check moved to TCP drops the matcher it had
		}
		if err := validTGHealthCheck(hc); err != nil {
			return "", err
		}
		tg.HealthCheck = hc
		out = tg.clone()
		return fmt.Sprintf("%+v", tg.HealthCheck), nil
	})
	return out, err
}

// TargetGroupAttributes returns or merges a target group's attributes.
func (c *Cloud) TargetGroupAttributes(ctx context.Context, arn string, set map[string]string) (map[string]string, error) {
	action := ActionDescribeTargetGroupAttributes
	if set != nil {
		action = ActionModifyTargetGroupAttributes
	}
	var out map[string]string
	err := c.tgOp(ctx, action, arn, summarizeTags(set), func(tg *TargetGroup) (string, error) {
		maps.Copy(tg.Attributes, set)
		out = maps.Clone(tg.Attributes)
		return fmt.Sprintf("%d attributes", len(out)), nil
	})
	return out, err
}

func summarizeTGTargets(ts []TGTarget) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s:%d", t.ID, t.Port)
	}
	return summarize(parts)
}

// RegisterTGTargets adds targets; a target without a port takes the
// group's. An instance group takes the lab's instances; an ip group takes
// private IPv4 addresses (RFC 1918, or RFC 6598's 100.64.0.0/10), which is
// where AWS lets ip targets be: the VPC's own range or one routed to it.
func (c *Cloud) RegisterTGTargets(ctx context.Context, arn string, ts []TGTarget) error {
	return c.tgOp(ctx, ActionRegisterTargets, arn, "targets="+summarizeTGTargets(ts), func(tg *TargetGroup) (string, error) {
		for _, t := range ts {
			if tg.TargetType == string(TargetTypeIP) {
				if a, err := netip.ParseAddr(t.ID); err != nil || !a.Is4() || !(a.IsPrivate() || sharedAddressSpace.Contains(a)) {
					return "", errorf(ErrInvalidTarget, "The IP address '%s' is not a private IPv4 address (RFC 1918 or RFC 6598)", t.ID)
				}
				continue
			}
			if _, ok := c.instances[t.ID]; !ok {
				return "", errorf(ErrInvalidTarget, "The following targets are not valid instances: '%s'", t.ID)
			}
		}
		var add []TGTarget
		for _, t := range ts {
			if t.Port == 0 {
				t.Port = tg.Port
			}
			if !slices.Contains(tg.Targets, t) && !slices.Contains(add, t) {
				add = append(add, t)
			}
		}
		if q := c.cfg.Quotas.TargetsPerTargetGroup; len(tg.Targets)+len(add) > q {
			return "", quotaError(ErrTooManyTargets, descTooManyTargets, fmt.Sprintf("this lab allows %d targets per target group (AWS's default quota)", q),
				fmt.Sprintf("'%s' has %d and this call would add %d", tg.Name, len(tg.Targets), len(add)), "Deregister targets first.")
		}
		tg.Targets = append(tg.Targets, add...)
		slices.SortFunc(tg.Targets, func(a, b TGTarget) int { return strings.Compare(a.ID, b.ID) })
		return fmt.Sprintf("%d targets", len(tg.Targets)), nil
	})
}

// DeregisterTGTargets removes targets; a port of 0 removes every port.
func (c *Cloud) DeregisterTGTargets(ctx context.Context, arn string, ts []TGTarget) error {
	return c.tgOp(ctx, ActionDeregisterTargets, arn, "targets="+summarizeTGTargets(ts), func(tg *TargetGroup) (string, error) {
		tg.Targets = slices.DeleteFunc(tg.Targets, func(have TGTarget) bool {
			return slices.ContainsFunc(ts, func(t TGTarget) bool { return t.ID == have.ID && (t.Port == 0 || t.Port == have.Port) })
		})
		return fmt.Sprintf("%d targets", len(tg.Targets)), nil
	})
}

// TargetHealthView is one target's health.
type TargetHealthView struct {
	TGTarget
	State       string // initial, healthy, unhealthy, unused, draining
	Reason      string
	Description string
	// HealthCheckPort is the port the group's checks go to: its
	// HealthCheckPort, or the target's own port for "traffic-port".
	HealthCheckPort string
}

// DescribeTargetHealth reports each target's health: what the data
// plane's health checks found (healthy until they have run: the AWS model
// has no prober of its own), unused with Target.InvalidState on an
// instance that is not running.
func (c *Cloud) DescribeTargetHealth(ctx context.Context, arn string) ([]TargetHealthView, error) {
	var out []TargetHealthView
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeTargetHealth, "tg="+arn, []string{arn}, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		tg, ok := c.aws.tgs[arn]
		if !ok {
			return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", arn)
		}
		for _, t := range tg.Targets {
			v := TargetHealthView{TGTarget: t, State: string(TargetHealthy), HealthCheckPort: strconv.Itoa(int(t.Port))}
			if _, err := strconv.Atoi(tg.HealthCheck.Port); err == nil {
				v.HealthCheckPort = tg.HealthCheck.Port
			}
			// What the data plane's health checks found, when they have
			// checked this target for the load balancer.
			for _, a := range tg.LoadBalancerARNs {
				if lb, ok := c.aws.nlbs[a]; ok {
					if h, ok := c.awsHealthLocked(lb.Name, t.ID, t.Port); ok {
						v.State, v.Reason = string(h.health), healthReasonCode(h.health, h.code)
						v.Description = targetHealthDescriptions[v.Reason]
					}
				}
			}
			if len(tg.LoadBalancerARNs) == 0 {
				v.State, v.Reason = string(TargetUnused), "Target.NotInUse"
				v.Description = targetHealthDescriptions[v.Reason]
			} else if rec, ok := c.instances[t.ID]; tg.TargetType != string(TargetTypeIP) && (!ok || rec.State != InstanceRunning) {
				v.State, v.Reason = string(TargetUnused), reasonInvalidState
				v.Description = targetHealthDescriptions[v.Reason]
			}
			out = append(out, v)
		}
		return fmt.Sprintf("%d targets", len(out)), nil
	})
	return out, err
}

// healthReasonCode is the ELBv2 reason code of a state the data plane
// recorded with AWS's code for it; the lab's own explanation of the state
// stays on the page and in the traces.
func healthReasonCode(h TargetHealth, code string) string {
	switch h {
	case TargetHealthy:
		return ""
	case TargetUnhealthy:
		switch code {
		case "Target.Timeout", "Target.ResponseCodeMismatch", "Target.FailedHealthChecks":
			return code
		}
		return "Target.FailedHealthChecks"
	case TargetInitial:
		if code == reasonInitialChecking {
			return code
		}
		return reasonRegistering
	}
	return code
}

// targetHealthDescriptions are the meanings ELBv2's TargetHealth
// reference gives each reason code (API_TargetHealth.html), answered as
// the Description.
var targetHealthDescriptions = map[string]string{
	reasonRegistering:                 "The target is in the process of being registered with the load balancer.",
	reasonInitialChecking:             "The load balancer is still sending the target the minimum number of health checks required to determine its health status.",
	"Target.ResponseCodeMismatch":     "The health checks did not return an expected HTTP code.",
	"Target.Timeout":                  "The health check requests timed out.",
	"Target.FailedHealthChecks":       "The load balancer received an error while establishing a connection to the target or the target response was malformed.",
	"Target.NotInUse":                 "The target group is not used by any load balancer or the target is in an Availability Zone that is not enabled for its load balancer.",
	reasonInvalidState:                "The target is in the stopped or terminated state.",
	"Target.DeregistrationInProgress": "The target is in the process of being deregistered and the deregistration delay period has not expired.",
}

// DeleteTargetGroup deletes a target group no listener uses.
func (c *Cloud) DeleteTargetGroup(ctx context.Context, arn string) error {
	return c.awsCall(ctx, ServiceELBv2, ActionDeleteTargetGroup, "tg="+arn, []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.aws.tgs[arn]; !ok {
			return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", arn)
		}
		for _, l := range c.aws.lsns {
			if l.TargetGroupARN == arn {
				return "", errorf(ErrResourceInUse, "Target group '%s' is currently in use by a listener or a rule", arn)
			}
		}
		delete(c.aws.tgs, arn)
		emit(EventELB, arn)
		return "deleted", nil
	})
}

// CreateListener adds a listener forwarding to a target group.
func (c *Cloud) CreateListener(ctx context.Context, in NLBListener) (NLBListener, error) {
	var out NLBListener
	err := c.awsCall(ctx, ServiceELBv2, ActionCreateListener, fmt.Sprintf("lb=%s %s:%d -> %s", in.LBARN, in.Protocol, in.Port, in.TargetGroupARN), []string{in.LBARN}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.aws.nlbs[in.LBARN]; !ok {
			return "", notFoundLB(in.LBARN)
		}
		tg, ok := c.aws.tgs[in.TargetGroupARN]
		if !ok {
			return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", in.TargetGroupARN)
		}
		if in.Port < 1 || in.Port > 65535 {
			return "", errorf(ErrValidation, "Port %d must be between 1 and 65535", in.Port)
		}
		have := 0
		for _, l := range c.aws.lsns {
			if l.LBARN == in.LBARN && l.Port == in.Port {
				return "", errorf(ErrDuplicateListener, "A listener already exists on this port for this load balancer")
			}
			if l.LBARN == in.LBARN {
				have++
			}
		}
		if q := c.cfg.Quotas.NetworkListenersPerLB; have >= q {
			return "", quotaError(ErrTooManyListeners, descTooManyListeners, fmt.Sprintf("this lab allows %d listeners per Network Load Balancer (AWS's default quota)", q),
				fmt.Sprintf("it has %d", have), "Give the Service fewer ports.")
		}
		if err := c.checkSocketsLocked(ErrTooManyListeners, descTooManyListeners, 0, sockets(in.Protocol)); err != nil {
			return "", err
		}
		l := in.clone()
		l.ARN = c.arnLocked("listener/net", in.LBARN[strings.LastIndex(in.LBARN, "net/")+4:])
		c.aws.lsns[l.ARN] = &l
		if !slices.Contains(tg.LoadBalancerARNs, in.LBARN) {
			tg.LoadBalancerARNs = append(tg.LoadBalancerARNs, in.LBARN)
		}
		out = l
		emit(EventELB, in.LBARN)
		return l.ARN, nil
	})
	return out, err
}

// DescribeListeners lists a load balancer's listeners (or the named ones).
func (c *Cloud) DescribeListeners(ctx context.Context, lbARN string, arns []string) ([]NLBListener, error) {
	var out []NLBListener
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeListeners, "lb="+lbARN+" arns="+summarize(arns), append([]string{lbARN}, arns...), func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if lbARN != "" {
			if _, ok := c.aws.nlbs[lbARN]; !ok {
				return "", notFoundLB(lbARN)
			}
		}
		for _, a := range arns {
			if _, ok := c.aws.lsns[a]; !ok {
				return "", errorf(ErrListenerNotFound, "One or more listeners not found")
			}
		}
		for _, a := range slices.Sorted(maps.Keys(c.aws.lsns)) {
			l := c.aws.lsns[a]
			if lbARN != "" && l.LBARN != lbARN || len(arns) > 0 && !slices.Contains(arns, a) {
				continue
			}
			out = append(out, l.clone())
		}
		slices.SortFunc(out, func(a, b NLBListener) int { return int(a.Port - b.Port) })
		return fmt.Sprintf("%d listeners", len(out)), nil
	})
	return out, err
}

// ModifyListener changes a listener's port, protocol or target group.
func (c *Cloud) ModifyListener(ctx context.Context, arn string, fn func(*NLBListener)) (NLBListener, error) {
	var out NLBListener
	err := c.awsCall(ctx, ServiceELBv2, ActionModifyListener, "listener="+arn, []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		l, ok := c.aws.lsns[arn]
		if !ok {
			return "", errorf(ErrListenerNotFound, "One or more listeners not found")
		}
		nl := *l
		fn(&nl)
		tg, ok := c.aws.tgs[nl.TargetGroupARN]
		if !ok {
			return "", errorf(ErrTargetGroupNotFound, "Target groups '%s' not found", nl.TargetGroupARN)
		}
		// A UDP listener made TCP takes a socket.
		if err := c.checkSocketsLocked(ErrTooManyListeners, descTooManyListeners, sockets(l.Protocol), sockets(nl.Protocol)); err != nil {
			return "", err
		}
		*l = nl
		if !slices.Contains(tg.LoadBalancerARNs, l.LBARN) {
			tg.LoadBalancerARNs = append(tg.LoadBalancerARNs, l.LBARN)
		}
		out = nl
		emit(EventELB, l.LBARN)
		return fmt.Sprintf("%s:%d -> %s", nl.Protocol, nl.Port, nl.TargetGroupARN), nil
	})
	return out, err
}

// DeleteListener deletes a listener.
func (c *Cloud) DeleteListener(ctx context.Context, arn string) error {
	return c.awsCall(ctx, ServiceELBv2, ActionDeleteListener, "listener="+arn, []string{arn}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		l, ok := c.aws.lsns[arn]
		if !ok {
			return "", errorf(ErrListenerNotFound, "One or more listeners not found")
		}
		delete(c.aws.lsns, arn)
		emit(EventELB, l.LBARN)
		return "deleted", nil
	})
}

// ELBv2Tags returns (set == nil) or adds tags of NLBs and target groups by
// ARN.
func (c *Cloud) ELBv2Tags(ctx context.Context, arns []string, set map[string]string) (map[string]map[string]string, error) {
	action := ActionDescribeTags
	if set != nil {
		action = ActionAddTags
	}
	out := map[string]map[string]string{}
	err := c.awsCall(ctx, ServiceELBv2, action, "arns="+summarize(arns)+" "+summarizeTags(set), arns, func(emit emitFunc) (string, error) {
		if err := validateTags(set); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		tagsOf := func(a string) (*map[string]string, error) {
			if lb, ok := c.aws.nlbs[a]; ok {
				return &lb.Tags, nil
			}
			if tg, ok := c.aws.tgs[a]; ok {
				return &tg.Tags, nil
			}
			if l, ok := c.aws.lsns[a]; ok {
				return &l.Tags, nil
			}
			if l := c.listenerOfRuleLocked(a); l != nil {
				return &l.RuleTags, nil
			}
			return nil, notFoundLB(a)
		}
		for _, a := range arns {
			if _, err := tagsOf(a); err != nil {
				return "", err
			}
		}
		for _, a := range arns {
			t, _ := tagsOf(a)
			if set != nil {
				if *t == nil {
					*t = map[string]string{}
				}
				maps.Copy(*t, set)
				emit(EventELB, a)
			}
			out[a] = cloneTags(*t)
		}
		return fmt.Sprintf("%d resources", len(out)), nil
	})
	return out, err
}

// listenerOfRuleLocked is the listener whose default rule has ARN arn.
func (c *Cloud) listenerOfRuleLocked(arn string) *NLBListener {
	for _, l := range c.aws.lsns {
		if l.DefaultRuleARN() == arn {
			return l
		}
	}
	return nil
}

// NLBListenerIdleTimeout is an NLB TCP listener's tcp.idle_timeout.seconds
// when nobody set it: 350 seconds
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html).
const NLBListenerIdleTimeout = "350"

// DescribeListenerAttributes returns a listener's attributes: a TCP
// listener's idle timeout, the one attribute the lab's NLB listeners have.
func (c *Cloud) DescribeListenerAttributes(ctx context.Context, arn string) (map[string]string, error) {
	out := map[string]string{}
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeListenerAttributes, "listener="+arn, []string{arn}, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		l, ok := c.aws.lsns[arn]
		if !ok {
			return "", errorf(ErrListenerNotFound, "One or more listeners not found")
		}
		if l.Protocol == "TCP" {
			out["tcp.idle_timeout.seconds"] = NLBListenerIdleTimeout
		}
		return fmt.Sprintf("%d attributes", len(out)), nil
	})
	return out, err
}

// ListenerRule is a listener's rule: on the lab's NLB listeners only the
// default rule, which forwards as the listener's default action does.
type ListenerRule struct {
	ARN            string
	ListenerARN    string
	TargetGroupARN string
}

// DescribeRules returns the rules of a listener, or the rules by ARN.
func (c *Cloud) DescribeRules(ctx context.Context, listenerARN string, arns []string) ([]ListenerRule, error) {
	var out []ListenerRule
	err := c.awsCall(ctx, ServiceELBv2, ActionDescribeRules, "listener="+listenerARN+" arns="+summarize(arns), append([]string{listenerARN}, arns...), func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		rule := func(l *NLBListener) ListenerRule {
			return ListenerRule{ARN: l.DefaultRuleARN(), ListenerARN: l.ARN, TargetGroupARN: l.TargetGroupARN}
		}
		switch {
		case listenerARN != "" && len(arns) > 0:
			return "", errorf(ErrValidation, "Listener ARN and rule ARNs cannot be specified at the same time")
		case listenerARN != "":
			l, ok := c.aws.lsns[listenerARN]
			if !ok {
				return "", errorf(ErrListenerNotFound, "One or more listeners not found")
			}
			out = append(out, rule(l))
		case len(arns) > 0:
			for _, a := range arns {
				l := c.listenerOfRuleLocked(a)
				if l == nil {
					return "", errorf(ErrRuleNotFound, "One or more rules not found")
				}
				out = append(out, rule(l))
			}
		default:
			return "", errorf(ErrValidation, "A listener ARN or rule ARNs must be specified")
		}
		return fmt.Sprintf("%d rules", len(out)), nil
	})
	return out, err
}
