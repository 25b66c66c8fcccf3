package cloud

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The AWS model's Classic ELBs and NLBs are what the upstream AWS provider
// makes; the data plane and the page read them as LoadBalancer values
// (Kind "classic" or "network"), the shape they already know for the lab's
// own load balancers, plus what only AWS has: subnets, security groups, the
// load balancer's own addresses in the VPC, proxy protocol and client IP
// preservation. Target health lives here too, set by the data plane's
// health checks as for the lab's load balancers, and answered by
// DescribeTargetHealth (docs/aws.md).

// Kinds of the AWS model's load balancers in a LoadBalancer view; the
// lab's own load balancers have no Kind.
const (
	LBKindClassic = "classic"
	LBKindNetwork = "network"
)

// ProxyProtocolPolicyType is the classic policy type that makes an ELB
// send a PROXY protocol v1 header to the instance port it is applied to.
const ProxyProtocolPolicyType = "ProxyProtocolPolicyType"

// LBAddress is one address of a load balancer in the VPC: an ELB or NLB
// has a network interface in each of its subnets, and that address is the
// source of the connections it opens to the instances.
type LBAddress struct {
	Zone   string `json:"zone"`
	Subnet string `json:"subnet"`
	IP     string `json:"ip"`
}

// awsHealthKey is a target of an AWS load balancer view: "id:port".
func awsHealthKey(id string, port int32) string { return id + ":" + strconv.Itoa(int(port)) }

type healthRec struct {
	health TargetHealth
	reason string
	code   string
}

// awsViewsLocked appends the Classic ELBs and NLBs to the one list of
// LoadBalancerViews. A Classic ELB that has not changed since an earlier
// call is the very same *LoadBalancer as then: the data plane rebuilds
// its view of the cloud after every burst of changes; with a thousand
// ELBs of a thousand instances each, copying every target each time held
// the cloud's lock for most of a second and starved the calls that change
// it. NLB views are built fresh: their listeners and target groups change
// under ARNs of their own, and a lab has few of them. Called with mu
// read-locked and viewMu held.
func (c *Cloud) awsViewsLocked(out []*LoadBalancer) []*LoadBalancer {
	if c.awsViews == nil {
		c.awsViews = map[string]*LoadBalancer{}
	}
	for name, lb := range c.aws.elbs {
		v := c.awsViews[name]
		if v == nil {
			cp := c.elbViewLocked(lb)
			v = &cp
			c.awsViews[name] = v
		}
		out = append(out, v)
	}
	if len(c.awsViews) > len(c.aws.elbs) { // drop the views of deleted ones
		for name := range c.awsViews {
			if _, ok := c.aws.elbs[name]; !ok {
				delete(c.awsViews, name)
			}
		}
	}
	for _, lb := range c.aws.nlbs {
		v := c.nlbViewLocked(lb)
		out = append(out, &v)
	}
	return out
}

// awsLoadBalancersLocked copies the Classic ELBs' and NLBs' views, for
// Snapshot.
func (c *Cloud) awsLoadBalancersLocked() []LoadBalancer {
	out := make([]LoadBalancer, 0, len(c.aws.elbs)+len(c.aws.nlbs))
	for _, lb := range c.aws.elbs {
		out = append(out, c.elbViewLocked(lb))
	}
	for _, lb := range c.aws.nlbs {
		out = append(out, c.nlbViewLocked(lb))
	}
	return out
}

// awsLoadBalancerLocked returns the view of the Classic ELB or NLB named
// name.
func (c *Cloud) awsLoadBalancerLocked(name string) (LoadBalancer, bool) {
	if lb, ok := c.aws.elbs[name]; ok {
		return c.elbViewLocked(lb), true
	}
	for _, lb := range c.aws.nlbs {
		if lb.Name == name {
			return c.nlbViewLocked(lb), true
		}
	}
	return LoadBalancer{}, false
}

// AWSLoadBalancerName maps an EventELB's ID (an ELB name, an NLB, target
// group or listener ARN) to the names of the load balancer views it
// changes.
func (c *Cloud) AWSLoadBalancerName(id string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !strings.HasPrefix(id, "arn:") {
		return []string{id}
	}
	if lb, ok := c.aws.nlbs[id]; ok {
		return []string{lb.Name}
	}
	// A deleted NLB: its ARN still names it (…:loadbalancer/net/<name>/<id>).
	if _, rest, ok := strings.Cut(id, ":loadbalancer/net/"); ok {
		if name, _, ok := strings.Cut(rest, "/"); ok {
			return []string{name}
		}
	}
	if tg, ok := c.aws.tgs[id]; ok {
		var out []string
		for _, a := range tg.LoadBalancerARNs {
			if lb, ok := c.aws.nlbs[a]; ok {
				out = append(out, lb.Name)
			}
		}
		return out
	}
	return nil
}

// SecurityGroupViews returns copies of every security group, sorted by ID:
// what the data plane enforces. Not an API call (DescribeSecurityGroups is
// the logged one).
func (c *Cloud) SecurityGroupViews() []SecurityGroup {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]SecurityGroup, 0, len(c.aws.groups))
	for _, id := range slices.Sorted(maps.Keys(c.aws.groups)) {
		out = append(out, c.aws.groups[id].clone())
	}
	return out
}

// NodeSecurityGroups is the security groups of every lab instance: each
// is a node, in the nodes' group (as DescribeInstances reports it).
func (c *Cloud) NodeSecurityGroups() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.aws.net.NodeGroupID == "" {
		return nil
	}
	return []string{c.aws.net.NodeGroupID}
}

// lbAddressesLocked gives a load balancer one address per subnet, from
// the top of the subnet (the lab's instances are numbered from the
// bottom) and stable for its name, so a trace shows the same ELB address
// every time, as a long-lived ELB node would.
func (c *Cloud) lbAddressesLocked(name string, subnets []string) []LBAddress {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	off := int(h.Sum32()%64) + 2
	var out []LBAddress
	for _, id := range subnets {
		i := slices.IndexFunc(c.aws.net.Subnets, func(s AWSSubnet) bool { return s.ID == id })
		if i < 0 {
			continue
		}
		s := c.aws.net.Subnets[i]
		p, err := netip.ParsePrefix(s.CIDR)
		if err != nil || !p.Addr().Is4() {
			continue
		}
		a := p.Masked().Addr().As4()
		n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		n += uint32(1)<<(32-p.Bits()) - 1 - uint32(off) // below the broadcast address
		ip := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		out = append(out, LBAddress{Zone: s.Zone, Subnet: s.ID, IP: ip.String()})
	}
	return out
}

// targetLocked is a target of view name with its recorded health: unused
// on an instance that is not running (as ELB reports it without a check),
// else what the data plane last found, else initial.
func (c *Cloud) targetLocked(name, id string, port int32) Target {
	t := Target{ID: id, Port: port, Health: TargetInitial, Reason: reasonRegistering, Code: reasonRegistering}
	if rec, ok := c.instances[id]; ok && rec.State != InstanceRunning {
		t.Health, t.Reason, t.Code = TargetUnused, reasonInvalidState, reasonInvalidState
		return t
	}
	if h, ok := c.aws.health[name][awsHealthKey(id, port)]; ok {
		t.Health, t.Reason, t.Code = h.health, h.reason, h.code
	}
	return t
}

// parseELBHealthCheck turns "HTTP:10256/healthz" or "TCP:31234" into a
// HealthCheck.
func parseELBHealthCheck(hc ELBHealthCheck) *HealthCheck {
	proto, rest, ok := strings.Cut(hc.Target, ":")
	if !ok {
		return nil
	}
	port, path, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	out := &HealthCheck{Protocol: strings.ToUpper(proto), Port: int32(n), IntervalSeconds: hc.Interval, TimeoutSeconds: hc.Timeout,
		HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold}
	if strings.HasPrefix(out.Protocol, "HTTP") {
		out.Path = "/" + path
	}
	return out
}

func (c *Cloud) elbViewLocked(lb *ClassicELB) LoadBalancer {
	v := LoadBalancer{
		Name: lb.Name, DNSName: lb.DNSName, Scheme: lb.Scheme, TargetType: TargetTypeInstance, Kind: LBKindClassic,
		Tags: cloneTags(lb.Tags), CreatedAt: lb.CreatedAt, HealthCheck: parseELBHealthCheck(lb.HealthCheck),
		Subnets: slices.Clone(lb.Subnets), SecurityGroups: slices.Clone(lb.SecurityGroups),
		Addresses: c.lbAddressesLocked(lb.Name, lb.Subnets),
	}
	var ports []int32
	for _, l := range lb.Listeners {
		// SSL and HTTPS listeners end TLS at the ELB; to the data plane
		// every classic listener carries a TCP connection to the NodePort.
		ln := Listener{Protocol: "TCP", Port: l.Port, TargetPort: l.InstancePort}
		if p := strings.ToUpper(l.Protocol); p == "HTTP" || p == "HTTPS" {
			ln.Frontend = p
		}
		v.Listeners = append(v.Listeners, ln)
		if c.elbProxyProtocolLocked(lb, l.InstancePort) && !slices.Contains(v.ProxyProtocolPorts, l.InstancePort) {
			v.ProxyProtocolPorts = append(v.ProxyProtocolPorts, l.InstancePort)
		}
		if !slices.Contains(ports, l.InstancePort) {
			ports = append(ports, l.InstancePort)
		}
	}
	// A classic ELB registers instances, not ports: each instance serves
	// every listener's instance port.
	for _, id := range lb.Instances {
		for _, p := range ports {
			v.Targets = append(v.Targets, c.targetLocked(lb.Name, id, p))
		}
	}
	sortTargets(v.Targets)
	return v
}

// elbProxyProtocolLocked reports whether a ProxyProtocolPolicyType policy
// with ProxyProtocol=true is applied to the instance port.
func (c *Cloud) elbProxyProtocolLocked(lb *ClassicELB, port int32) bool {
	for _, name := range lb.BackendPolicies[port] {
		i := slices.IndexFunc(lb.Policies, func(p ELBPolicy) bool { return p.Name == name })
		if i >= 0 && lb.Policies[i].Type == ProxyProtocolPolicyType && strings.EqualFold(lb.Policies[i].Attributes["ProxyProtocol"], "true") {
			return true
		}
	}
	return false
}

func (c *Cloud) nlbViewLocked(lb *NLB) LoadBalancer {
	v := LoadBalancer{
		Name: lb.Name, DNSName: lb.DNSName, Scheme: lb.Scheme, TargetType: TargetTypeInstance, Kind: LBKindNetwork,
		Tags: cloneTags(lb.Tags), CreatedAt: lb.CreatedAt,
		Subnets: slices.Clone(lb.Subnets), SecurityGroups: slices.Clone(lb.SecurityGroups),
		Addresses: c.lbAddressesLocked(lb.Name, lb.Subnets),
	}
	var lsns []*NLBListener
	for _, l := range c.aws.lsns {
		if l.LBARN == lb.ARN {
			lsns = append(lsns, l)
		}
	}
	slices.SortFunc(lsns, func(a, b *NLBListener) int { return cmp.Compare(a.Port, b.Port) })
	seen := map[string]bool{}
	for i, l := range lsns {
		tg := c.aws.tgs[l.TargetGroupARN]
		if tg == nil {
			continue
		}
		proto := l.Protocol
		if proto == "TLS" || proto == "TCP_UDP" {
			proto = "TCP"
		}
		v.Listeners = append(v.Listeners, Listener{Protocol: proto, Port: l.Port, TargetPort: tg.Port})
		if tg.Attributes["proxy_protocol_v2.enabled"] == "true" && !slices.Contains(v.ProxyProtocolPorts, tg.Port) {
			v.ProxyProtocolPorts = append(v.ProxyProtocolPorts, tg.Port)
		}
		if i == 0 {
			// The data plane reads one target type, health check and
			// client IP setting per load balancer; the provider makes
			// every target group of a Service alike.
			v.TargetType = cmp.Or(TargetType(tg.TargetType), TargetTypeInstance)
			v.PreserveClientIP = preserveClientIP(tg)
			v.HealthCheck = tgHealthCheck(tg)
		}
		for _, t := range tg.Targets {
			k := awsHealthKey(t.ID, t.Port)
			if !seen[k] {
				seen[k] = true
				v.Targets = append(v.Targets, c.targetLocked(lb.Name, t.ID, t.Port))
			}
		}
	}
	sortTargets(v.Targets)
	return v
}

// preserveClientIP is the target group's preserve_client_ip.enabled, or
// AWS's default: on for instance targets, off for ip targets over TCP.
func preserveClientIP(tg *TargetGroup) bool {
	if v, ok := tg.Attributes["preserve_client_ip.enabled"]; ok {
		return v == "true"
	}
	return tg.TargetType != string(TargetTypeIP) || tg.Protocol == "UDP" || tg.Protocol == "TCP_UDP"
}

// tgHealthCheck is the target group's check; "traffic-port" becomes the
// group's port.
func tgHealthCheck(tg *TargetGroup) *HealthCheck {
	hc := &HealthCheck{Protocol: strings.ToUpper(cmp.Or(tg.HealthCheck.Protocol, "TCP")), Port: tg.Port, Path: tg.HealthCheck.Path,
		IntervalSeconds: tg.HealthCheck.IntervalSeconds, TimeoutSeconds: tg.HealthCheck.TimeoutSeconds,
		HealthyThreshold: tg.HealthCheck.HealthyThreshold, UnhealthyThreshold: tg.HealthCheck.UnhealthyThreshold,
		Matcher: tg.HealthCheck.Matcher}
	if n, err := strconv.Atoi(tg.HealthCheck.Port); err == nil {
		hc.Port = int32(n)
	}
	return hc
}

func sortTargets(ts []Target) {
	slices.SortFunc(ts, func(a, b Target) int { return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(a.Port, b.Port)) })
}

// setAWSTargetsHealth is SetTargetsHealth for a Classic ELB or NLB view:
// health is kept beside the model (c.aws.health), by view name and
// "id:port", since a Classic ELB registers instances, not ports;
// subscribers get an EventELB when the health actually changes. Health
// is not persisted, as for the lab's load balancers.
func (c *Cloud) setAWSTargetsHealth(name string, updates []TargetHealthUpdate) error {
	c.mu.Lock()
	_, isELB := c.aws.elbs[name]
	isNLB := slices.ContainsFunc(slices.Collect(maps.Values(c.aws.nlbs)), func(lb *NLB) bool { return lb.Name == name })
	if !isELB && !isNLB {
		c.mu.Unlock()
		return errorf(ErrLBNotFound, "Load balancer '%s' not found", name)
	}
	if c.aws.health == nil {
		c.aws.health = map[string]map[string]healthRec{}
	}
	m := c.aws.health[name]
	if m == nil {
		m = map[string]healthRec{}
		c.aws.health[name] = m
	}
	changed := false
	for _, u := range updates {
		k := awsHealthKey(u.ID, u.Port)
		rec := healthRec{u.Health, u.Reason, u.Code}
		if m[k] != rec {
			m[k] = rec
			changed = true
		}
	}
	if changed {
		c.dropAWSView(name)
	}
	c.mu.Unlock()
	if changed {
		c.publish(Event{Kind: EventELB, ID: name})
	}
	return nil
}

// awsHealthLocked is the recorded health of a target of view name, if any.
func (c *Cloud) awsHealthLocked(name, id string, port int32) (healthRec, bool) {
	h, ok := c.aws.health[name][awsHealthKey(id, port)]
	return h, ok
}

// CreateELBPolicy adds a policy to a classic load balancer; the same name
// again replaces it (the SDK does not surface AWS's DuplicatePolicyName,
// and the provider calls this on every sync).
func (c *Cloud) CreateELBPolicy(ctx context.Context, name string, p ELBPolicy) error {
	return c.elbOp(ctx, ActionCreateLoadBalancerPolicy, name, fmt.Sprintf("policy=%s type=%s", p.Name, p.Type), func(lb *ClassicELB) (string, error) {
		if p.Name == "" || p.Type == "" {
			return "", errorf(ErrValidation, "PolicyName and PolicyTypeName are required")
		}
		p.Attributes = maps.Clone(p.Attributes)
		if i := slices.IndexFunc(lb.Policies, func(o ELBPolicy) bool { return o.Name == p.Name }); i >= 0 {
			lb.Policies[i] = p
		} else {
			lb.Policies = append(lb.Policies, p)
		}
		return p.Name, nil
	})
}

// SetELBBackendPolicies replaces the policies applied to an instance port;
// none removes them.
func (c *Cloud) SetELBBackendPolicies(ctx context.Context, name string, port int32, policies []string) error {
	return c.elbOp(ctx, ActionSetBackendPolicies, name, fmt.Sprintf("port=%d policies=%s", port, summarize(policies)), func(lb *ClassicELB) (string, error) {
		for _, p := range policies {
			if !slices.ContainsFunc(lb.Policies, func(o ELBPolicy) bool { return o.Name == p }) {
				return "", errorf("PolicyNotFound", "There is no policy with name %s for load balancer %s", p, name)
			}
		}
		if len(policies) == 0 {
			delete(lb.BackendPolicies, port)
			return "none", nil
		}
		if lb.BackendPolicies == nil {
			lb.BackendPolicies = map[int32][]string{}
		}
		lb.BackendPolicies[port] = slices.Clone(policies)
		return summarize(policies), nil
	})
}

// ELBInstanceHealth is a Classic ELB's view of one registered instance.
type ELBInstanceHealth struct {
	InstanceID  string
	State       string // InService, OutOfService
	ReasonCode  string // ELB, Instance, N/A
	Description string
}

// elbInstanceStateReason is an OutOfService instance's ReasonCode and
// Description, in the words of ELB's InstanceState reference: only AWS's
// codes and sentences, never the lab's own explanation (t.Reason), which
// would hand the answer of a diagnosis over in the AWS API.
func elbInstanceStateReason(t Target, rec *instanceRec) (code, desc string) {
	switch {
	case t.Health == TargetUnused && rec != nil:
		switch rec.State {
		case InstancePending:
			return "Instance", "Instance is in pending state."
		case InstanceTerminated, InstanceShuttingDown:
			return "Instance", "Instance is in terminated state."
		}
		return "Instance", "Instance is in stopped state."
	case t.Health == TargetUnused:
		return "Instance", "Instance is in terminated state."
	case t.Health == TargetInitial && t.Code == reasonInitialChecking:
		return "Instance", "Instance has not passed the configured HealthyThreshold number of health checks consecutively."
	case t.Health == TargetInitial:
		return "ELB", "Instance registration is still in progress."
	}
	return "Instance", "Instance has failed at least the UnhealthyThreshold number of health checks consecutively."
}

// DescribeELBInstanceHealth answers DescribeInstanceHealth from the data
// plane's health checks (the instance's health on every instance port):
// InService when all are healthy; OutOfService while registration is in
// progress (not checked yet), when a check failed, or when the instance is
// not running. ids narrows to those instances; one not registered fails
// the call with InvalidInstance, as on AWS.
func (c *Cloud) DescribeELBInstanceHealth(ctx context.Context, name string, ids []string) ([]ELBInstanceHealth, error) {
	var out []ELBInstanceHealth
	err := c.awsCall(ctx, ServiceELB, ActionDescribeInstanceHealth, "name="+name+" instances="+summarize(ids), []string{name}, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		lb, ok := c.aws.elbs[name]
		if !ok {
			return "", errorf(ErrLBNotFound, "There is no ACTIVE Load Balancer named '%s'", name)
		}
		if len(ids) == 0 {
			ids = lb.Instances
		}
		v := c.elbViewLocked(lb)
		for _, id := range ids {
			if !slices.Contains(lb.Instances, id) {
				return "", errorf("InvalidInstance", "Could not find EC2 instance %s registered with load balancer %s", id, name)
			}
			h := ELBInstanceHealth{InstanceID: id, State: "InService", ReasonCode: "N/A", Description: "N/A"}
			for _, t := range v.Targets {
				if t.ID != id || t.Health == TargetHealthy {
					continue
				}
				h.State = "OutOfService"
				h.ReasonCode, h.Description = elbInstanceStateReason(t, c.instances[id])
				break
			}
			out = append(out, h)
		}
		return fmt.Sprintf("%d instances", len(out)), nil
	})
	return out, err
}
