package cloud

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TargetType says what a load balancer sends traffic to: nodes (on their
// NodePort) or Pod IPs directly.
type TargetType string

const (
	TargetTypeInstance TargetType = "instance"
	TargetTypeIP       TargetType = "ip"
)

// Schemes.
const (
	SchemeInternetFacing = "internet-facing"
	SchemeInternal       = "internal"
)

// TargetHealth is the ELB target health state. The cloud sets "initial" and
// "unused" itself; the data plane's health checker reports the rest through
// SetTargetHealth.
type TargetHealth string

const (
	TargetInitial   TargetHealth = "initial"
	TargetHealthy   TargetHealth = "healthy"
	TargetUnhealthy TargetHealth = "unhealthy"
	TargetUnused    TargetHealth = "unused"
)

// Health reason codes, as ELB reports them.
const (
	reasonRegistering     = "Elb.RegistrationInProgress"
	reasonInvalidState    = "Target.InvalidState"
	reasonInitialChecking = "Elb.InitialHealthChecking"
)

// Listener forwards Protocol/Port on the load balancer to TargetPort on each
// target: the Service's NodePort in instance mode, the container port in ip
// mode.
type Listener struct {
	Protocol   string `json:"protocol"` // TCP (default) or UDP
	Port       int32  `json:"port"`
	TargetPort int32  `json:"targetPort"`
	// Frontend is "HTTP" or "HTTPS" for a Classic ELB listener that
	// speaks HTTP itself (and answers 503 with no healthy instance);
	// empty for a listener that only carries TCP or UDP.
	Frontend string `json:"frontend,omitempty"`
}

func (l Listener) String() string {
	return fmt.Sprintf("%d->%d/%s", l.Port, l.TargetPort, l.Protocol)
}

// Target is an instance ID or an IP address, with its port and health.
type Target struct {
	ID     string       `json:"id"`
	Port   int32        `json:"port"`
	Health TargetHealth `json:"health"`
	Reason string       `json:"reason,omitempty"`
	// Code is AWS's reason code for Health (TargetHealthUpdate.Code).
	Code string `json:"code,omitempty"`
}

// HealthCheck is how the load balancer probes its targets. Zero
// IntervalSeconds and thresholds take the defaults of the in-tree AWS
// provider (10s, 2 healthy, 6 unhealthy), which the chapter describes.
type HealthCheck struct {
	Protocol           string `json:"protocol"` // TCP, HTTP or HTTPS
	Port               int32  `json:"port"`
	Path               string `json:"path,omitempty"` // HTTP(S) only; default "/"
	IntervalSeconds    int32  `json:"intervalSeconds"`
	TimeoutSeconds     int32  `json:"timeoutSeconds,omitempty"`
	HealthyThreshold   int32  `json:"healthyThreshold"`
	UnhealthyThreshold int32  `json:"unhealthyThreshold"`
	// Matcher is an NLB target group's HTTP codes (TGHealthCheck.Matcher);
	// "" elsewhere (a Classic ELB takes only 200).
	Matcher string `json:"matcher,omitempty"`
}

// LoadBalancer is reached through DNSName (hostname mode) or IP (ip mode);
// the other one is empty.
type LoadBalancer struct {
	Name        string            `json:"name"`
	DNSName     string            `json:"dnsName,omitempty"`
	IP          string            `json:"ip,omitempty"`
	Scheme      string            `json:"scheme"`
	TargetType  TargetType        `json:"targetType"`
	Listeners   []Listener        `json:"listeners"`
	Targets     []Target          `json:"targets"` // sorted by ID, then Port
	HealthCheck *HealthCheck      `json:"healthCheck,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	CreatedAt   time.Time         `json:"createdAt"`

	// The AWS model's Classic ELBs and NLBs (aws_views.go) also have:
	Kind           string      `json:"kind,omitempty"` // LBKindClassic or LBKindNetwork; "" for the lab's own
	Subnets        []string    `json:"subnets,omitempty"`
	SecurityGroups []string    `json:"securityGroups,omitempty"`
	Addresses      []LBAddress `json:"addresses,omitempty"` // its own addresses in the VPC, one per subnet
	// PreserveClientIP: an NLB target group's preserve_client_ip.enabled;
	// without it the targets see one of Addresses.
	PreserveClientIP bool `json:"preserveClientIP,omitempty"`
	// ProxyProtocolPorts are the target ports the load balancer sends a
	// PROXY protocol header to, with the client's address, before the
	// connection's data (a Classic ELB's backend policy, an NLB target
	// group's proxy_protocol_v2.enabled).
	ProxyProtocolPorts []int32 `json:"proxyProtocolPorts,omitempty"`
}

// Target is the health check in a Classic ELB's form: "TCP:31234",
// "HTTP:10256/healthz".
func (h *HealthCheck) Target() string {
	if h == nil {
		return ""
	}
	return h.Protocol + ":" + strconv.Itoa(int(h.Port)) + h.Path
}

func (lb *LoadBalancer) clone() LoadBalancer {
	out := *lb
	out.Listeners = slices.Clone(lb.Listeners)
	out.Targets = slices.Clone(lb.Targets)
	if out.Targets == nil {
		out.Targets = []Target{}
	}
	if lb.HealthCheck != nil {
		hc := *lb.HealthCheck
		out.HealthCheck = &hc
	}
	out.Tags = cloneTags(lb.Tags)
	out.Subnets = slices.Clone(lb.Subnets)
	out.SecurityGroups = slices.Clone(lb.SecurityGroups)
	out.Addresses = slices.Clone(lb.Addresses)
	out.ProxyProtocolPorts = slices.Clone(lb.ProxyProtocolPorts)
	return out
}

// CreateLoadBalancerInput describes a new load balancer. TargetType ""
// means instance, Scheme "" means internet-facing.
type CreateLoadBalancerInput struct {
	Name       string            `json:"name"`
	Listeners  []Listener        `json:"listeners"`
	TargetType TargetType        `json:"targetType,omitempty"`
	Scheme     string            `json:"scheme,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// CreateLoadBalancer creates a load balancer with no targets. It gets a DNS
// name (the name lowercased, as DNS is case-insensitive) or, in ip ingress
// mode, an IP from Config.LBCIDR.
func (c *Cloud) CreateLoadBalancer(ctx context.Context, in CreateLoadBalancerInput) (LoadBalancer, error) {
	tt := cmp.Or(in.TargetType, TargetTypeInstance)
	scheme := cmp.Or(in.Scheme, SchemeInternetFacing)
	req := fmt.Sprintf("name=%s listeners=%s type=%s scheme=%s", in.Name, summarizeListeners(in.Listeners), tt, scheme)
	if len(in.Tags) > 0 {
		req += " tags=" + summarizeTags(in.Tags)
	}
	var out LoadBalancer
	err := c.call(ctx, ActionCreateLoadBalancer, req, []string{in.Name}, func(emit emitFunc) (string, error) {
		if err := validateLBName(in.Name); err != nil {
			return "", err
		}
		ls, err := normalizeListeners(in.Listeners)
		if err != nil {
			return "", err
		}
		if err := c.checkListenersPerLB(len(ls)); err != nil {
			return "", err
		}
		if tt != TargetTypeInstance && tt != TargetTypeIP {
			return "", errorf(ErrValidation, "Target type '%s' must be one of [instance, ip]", tt)
		}
		if scheme != SchemeInternetFacing && scheme != SchemeInternal {
			return "", errorf(ErrValidation, "Scheme '%s' must be one of [internet-facing, internal]", scheme)
		}
		if err := validateTags(in.Tags); err != nil {
			return "", err
		}

		c.mu.Lock()
		defer c.mu.Unlock()
		if _, dup := c.lbs[in.Name]; dup {
			return "", errorf(ErrDuplicateLB, "A load balancer with the name '%s' already exists", in.Name)
		}
		if q := c.cfg.Quotas.LoadBalancers; len(c.lbs) >= q {
			return "", quotaError(ErrTooManyLoadBalancers, descTooManyLBs, fmt.Sprintf("this lab allows %d load balancers", q),
				fmt.Sprintf("%d exist", len(c.lbs)), "Delete one (or its Service) first.")
		}
		if err := c.checkSocketsLocked(ErrTooManyListeners, descTooManyListeners, 0, socketListeners(ls)); err != nil {
			return "", err
		}
		lb := &LoadBalancer{
			Name:       in.Name,
			Scheme:     scheme,
			TargetType: tt,
			Listeners:  ls,
			Tags:       cloneTags(in.Tags),
			CreatedAt:  c.now(),
		}
		if c.cfg.IngressMode == IngressIP {
			ip, ok := c.net.lb.Allocate()
			if !ok {
				return "", errorf(ErrNoAddresses, "No free load balancer address left in %s", c.net.lb.Prefix())
			}
			lb.IP = ip.String()
		} else {
			lb.DNSName = fmt.Sprintf("%s-%010d.elb.%s.%s", strings.ToLower(in.Name), randDigits(), c.cfg.Region, c.cfg.Domain)
		}
		c.lbs[lb.Name] = lb
		emit(EventLoadBalancer, lb.Name)
		out = lb.clone()
		return "ingress=" + cmp.Or(lb.DNSName, lb.IP), nil
	})
	return out, err
}

// checkListenersPerLB applies the per-load-balancer listener quota of the
// lab's own load balancers.
func (c *Cloud) checkListenersPerLB(n int) error {
	if q := c.cfg.Quotas.ListenersPerLoadBalancer; n > q {
		return quotaError(ErrTooManyListeners, descTooManyListeners, fmt.Sprintf("this lab allows %d listeners per load balancer", q),
			fmt.Sprintf("this call asks for %d", n), "Give the Service fewer ports.")
	}
	return nil
}

// randDigits gives the 10-digit suffix that makes LB DNS names unguessable,
// as on AWS.
func randDigits() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) % 1e10
}

// DescribeLoadBalancers returns the named load balancers in request order,
// or all of them by name when none is named. One unknown name fails the call.
func (c *Cloud) DescribeLoadBalancers(ctx context.Context, names ...string) ([]LoadBalancer, error) {
	req := "all"
	if len(names) > 0 {
		req = "names=" + summarize(names)
	}
	var out []LoadBalancer
	err := c.call(ctx, ActionDescribeLoadBalancers, req, names, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if len(names) == 0 {
			out = c.ownLoadBalancersLocked()
			return fmt.Sprintf("%d load balancers", len(out)), nil
		}
		var missing []string
		seen := make(map[string]bool, len(names))
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if lb, ok := c.lbs[n]; ok {
				out = append(out, lb.clone())
			} else {
				missing = append(missing, n)
			}
		}
		if len(missing) == 1 {
			out = nil
			return "", errorf(ErrLBNotFound, "Load balancer '%s' not found", missing[0])
		} else if len(missing) > 1 {
			out = nil
			return "", errorf(ErrLBNotFound, "Load balancers '%s' not found", strings.Join(missing, ", "))
		}
		if len(out) == 1 {
			return fmt.Sprintf("1 load balancer: %s targets=%d", out[0].Name, len(out[0].Targets)), nil
		}
		return fmt.Sprintf("%d load balancers", len(out)), nil
	})
	return out, err
}

// SetListeners replaces all listeners of a load balancer.
func (c *Cloud) SetListeners(ctx context.Context, name string, ls []Listener) (LoadBalancer, error) {
	req := fmt.Sprintf("name=%s listeners=%s", name, summarizeListeners(ls))
	var out LoadBalancer
	err := c.call(ctx, ActionModifyListeners, req, []string{name}, func(emit emitFunc) (string, error) {
		nls, err := normalizeListeners(ls)
		if err != nil {
			return "", err
		}
		if err := c.checkListenersPerLB(len(nls)); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, err := c.lbLocked(name)
		if err != nil {
			return "", err
		}
		if err := c.checkSocketsLocked(ErrTooManyListeners, descTooManyListeners, socketListeners(lb.Listeners), socketListeners(nls)); err != nil {
			return "", err
		}
		lb.Listeners = nls
		emit(EventLoadBalancer, name)
		out = lb.clone()
		return "listeners=" + summarizeListeners(nls), nil
	})
	return out, err
}

// RegisterTargets adds targets; registering one twice is a no-op. Instance
// targets must be existing, non-terminated instances (a stopped one is
// registered as "unused"); ip targets must be IP addresses. One bad target
// fails the whole call.
func (c *Cloud) RegisterTargets(ctx context.Context, name string, ts []Target) error {
	req := fmt.Sprintf("name=%s targets=%s", name, summarizeTargets(ts))
	return c.call(ctx, ActionRegisterTargets, req, []string{name}, func(emit emitFunc) (string, error) {
		if len(ts) == 0 {
			return "", errorf(ErrValidation, "Targets must contain at least one target")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, err := c.lbLocked(name)
		if err != nil {
			return "", err
		}
		add := make([]Target, 0, len(ts))
		var invalid []string
		for _, t := range ts {
			if t.Port < 1 || t.Port > 65535 {
				return "", errorf(ErrValidation, "Port %d of target '%s' must be between 1 and 65535", t.Port, t.ID)
			}
			nt := Target{ID: t.ID, Port: t.Port, Health: TargetInitial, Reason: reasonRegistering}
			switch lb.TargetType {
			case TargetTypeInstance:
				rec, ok := c.instances[t.ID]
				if !ok || rec.State == InstanceTerminated {
					invalid = append(invalid, t.ID)
					continue
				}
				if rec.State != InstanceRunning {
					nt.Health, nt.Reason = TargetUnused, reasonInvalidState
				}
			case TargetTypeIP:
				a, err := netip.ParseAddr(t.ID)
				if err != nil {
					invalid = append(invalid, t.ID)
					continue
				}
				nt.ID = a.String()
			}
			add = append(add, nt)
		}
		if len(invalid) > 0 {
			what := "existing, non-terminated instances"
			if lb.TargetType == TargetTypeIP {
				what = "IP addresses"
			}
			return "", errorf(ErrInvalidTarget, "The following targets are not %s: '%s'", what, strings.Join(invalid, ", "))
		}
		merged := lb.Targets
		fresh := map[Target]bool{}
		for _, t := range add {
			key := Target{ID: t.ID, Port: t.Port}
			if _, found := slices.BinarySearchFunc(lb.Targets, t, compareTargets); found || fresh[key] {
				continue
			}
			fresh[key] = true
			merged = append(merged, t)
		}
		added := len(fresh)
		if q := c.cfg.Quotas.TargetsPerLoadBalancer; len(lb.Targets)+added > q {
			return "", quotaError(ErrTooManyTargets, descTooManyTargets, fmt.Sprintf("this lab allows %d targets per load balancer", q),
				fmt.Sprintf("'%s' has %d and this call would add %d", name, len(lb.Targets), added), "Deregister targets first.")
		}
		if added > 0 {
			slices.SortFunc(merged, compareTargets)
			lb.Targets = merged
			emit(EventLoadBalancer, name)
		}
		return fmt.Sprintf("added %d (total %d)", added, len(lb.Targets)), nil
	})
}

// DeregisterTargets removes targets; removing one that is not registered is
// a no-op, so controllers can retry freely. Port 0 matches every port of
// that target ID.
func (c *Cloud) DeregisterTargets(ctx context.Context, name string, ts []Target) error {
	req := fmt.Sprintf("name=%s targets=%s", name, summarizeTargets(ts))
	return c.call(ctx, ActionDeregisterTargets, req, []string{name}, func(emit emitFunc) (string, error) {
		if len(ts) == 0 {
			return "", errorf(ErrValidation, "Targets must contain at least one target")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, err := c.lbLocked(name)
		if err != nil {
			return "", err
		}
		drop := make(map[Target]bool, len(ts)) // keyed by ID and Port only
		for _, d := range ts {
			drop[Target{ID: d.ID, Port: d.Port}] = true
		}
		kept := make([]Target, 0, len(lb.Targets))
		for _, t := range lb.Targets {
			if !drop[Target{ID: t.ID, Port: t.Port}] && !drop[Target{ID: t.ID}] {
				kept = append(kept, t)
			}
		}
		removed := len(lb.Targets) - len(kept)
		if removed > 0 {
			lb.Targets = kept
			emit(EventLoadBalancer, name)
		}
		return fmt.Sprintf("removed %d (total %d)", removed, len(lb.Targets)), nil
	})
}

// ConfigureHealthCheck sets (replaces) the health check of a load balancer.
func (c *Cloud) ConfigureHealthCheck(ctx context.Context, name string, hc HealthCheck) error {
	req := fmt.Sprintf("name=%s check=%s:%d%s interval=%ds", name, cmp.Or(hc.Protocol, "TCP"), hc.Port, hc.Path, hc.IntervalSeconds)
	return c.call(ctx, ActionConfigureHealthCheck, req, []string{name}, func(emit emitFunc) (string, error) {
		nhc, err := normalizeHealthCheck(hc)
		if err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, err := c.lbLocked(name)
		if err != nil {
			return "", err
		}
		lb.HealthCheck = &nhc
		emit(EventLoadBalancer, name)
		return fmt.Sprintf("%s:%d%s every %ds, healthy after %d, unhealthy after %d",
			nhc.Protocol, nhc.Port, nhc.Path, nhc.IntervalSeconds, nhc.HealthyThreshold, nhc.UnhealthyThreshold), nil
	})
}

// DeleteLoadBalancer deletes a load balancer and frees its IP.
func (c *Cloud) DeleteLoadBalancer(ctx context.Context, name string) error {
	return c.call(ctx, ActionDeleteLoadBalancer, "name="+name, []string{name}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		lb, err := c.lbLocked(name)
		if err != nil {
			return "", err
		}
		if lb.IP != "" {
			c.net.lb.Release(parseAddr(lb.IP))
		}
		delete(c.lbs, name)
		emit(EventLoadBalancer, name)
		return "deleted", nil
	})
}

// TargetHealthUpdate is one target's observed health, for SetTargetsHealth.
type TargetHealthUpdate struct {
	ID     string
	Port   int32 // 0 matches every port of ID
	Health TargetHealth
	Reason string
	// Code is AWS's reason code for the state (Target.Timeout, ...),
	// the only part the AWS API answers with; Reason is the lab's own
	// explanation, for the page and the traces.
	Code string
}

// SetTargetsHealth is SetTargetHealth for many targets of one load
// balancer: one lock and at most one "loadbalancer" event for all of them.
// A health check round after 1,000 nodes joined changes a million targets;
// one event per target would have every subscriber re-read the cloud a
// million times. Updates naming no registered target are skipped and
// counted in the error; the others still apply.
//
// It is the one health setter of the one list of load balancers
// (LoadBalancerViews): name is a lab load balancer's or, when the lab has
// none of that name, a Classic ELB's or NLB's (aws_views.go), whose
// updates are not checked against registrations (a Classic ELB's targets
// are its instances on every instance port).
func (c *Cloud) SetTargetsHealth(name string, updates []TargetHealthUpdate) error {
	for _, u := range updates {
		switch u.Health {
		case TargetInitial, TargetHealthy, TargetUnhealthy, TargetUnused:
		default:
			return errorf(ErrValidation, "Target health '%s' must be one of [initial, healthy, unhealthy, unused]", u.Health)
		}
	}
	c.mu.RLock()
	_, own := c.lbs[name]
	c.mu.RUnlock()
	if !own {
		return c.setAWSTargetsHealth(name, updates)
	}
	return c.setOwnTargetsHealth(name, updates)
}

// setOwnTargetsHealth is SetTargetsHealth for a lab load balancer.
func (c *Cloud) setOwnTargetsHealth(name string, updates []TargetHealthUpdate) error {
	c.mu.Lock()
	lb, err := c.lbLocked(name)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	missing, changed := 0, false
	for _, u := range updates {
		found := false
		for i := firstTarget(lb.Targets, u.ID); i < len(lb.Targets) && lb.Targets[i].ID == u.ID; i++ {
			t := &lb.Targets[i]
			if u.Port == 0 || t.Port == u.Port {
				found = true
				if t.Health != u.Health || t.Reason != u.Reason || t.Code != u.Code {
					t.Health, t.Reason, t.Code = u.Health, u.Reason, u.Code
					changed = true
				}
			}
		}
		if !found {
			missing++
		}
	}
	c.mu.Unlock()
	if changed {
		c.dropView(name)
		c.publish(Event{Kind: EventLoadBalancer, ID: name})
	}
	switch {
	case missing == 1 && len(updates) == 1:
		return errorf(ErrInvalidTarget, "Target '%s' port %d is not registered with load balancer '%s'", updates[0].ID, updates[0].Port, name)
	case missing > 0:
		return errorf(ErrInvalidTarget, "%d of %d targets are not registered with load balancer '%s'", missing, len(updates), name)
	}
	return nil
}

// SetTargetHealth records what the data plane's health checker observed.
// It is not an API call: no IAM, rate limit, step mode or call log, but
// subscribers get a "loadbalancer" event when the health actually changes.
// Port 0 matches every port of targetID. Health is not persisted: after a
// restart every target starts "initial" until it is checked again.
func (c *Cloud) SetTargetHealth(name, targetID string, port int32, h TargetHealth, reason string) error {
	return c.SetTargetsHealth(name, []TargetHealthUpdate{{ID: targetID, Port: port, Health: h, Reason: reason}})
}

func (c *Cloud) lbLocked(name string) (*LoadBalancer, error) {
	lb, ok := c.lbs[name]
	if !ok {
		return nil, errorf(ErrLBNotFound, "Load balancer '%s' not found", name)
	}
	return lb, nil
}

// ownLoadBalancersLocked copies the lab's own load balancers, by name:
// what the lab's DescribeLoadBalancers answers.
func (c *Cloud) ownLoadBalancersLocked() []LoadBalancer {
	names := slices.Sorted(maps.Keys(c.lbs))
	out := make([]LoadBalancer, len(names))
	for i, n := range names {
		out[i] = c.lbs[n].clone()
	}
	return out
}

// allLoadBalancersLocked copies the one list: the lab's own load
// balancers and the AWS model's, by name and then kind.
func (c *Cloud) allLoadBalancersLocked() []LoadBalancer {
	out := append(c.ownLoadBalancersLocked(), c.awsLoadBalancersLocked()...)
	slices.SortFunc(out, compareLBs)
	return out
}

// setInstanceTargetsLocked follows an instance's stop/start into the health
// of its targets, as ELB does without waiting for a health check.
func (c *Cloud) setInstanceTargetsLocked(id string, h TargetHealth, reason string, emit emitFunc) {
	for _, lb := range c.lbs {
		if lb.TargetType != TargetTypeInstance {
			continue
		}
		changed := false
		for i := firstTarget(lb.Targets, id); i < len(lb.Targets) && lb.Targets[i].ID == id; i++ {
			lb.Targets[i].Health, lb.Targets[i].Reason = h, reason
			changed = true
		}
		if changed {
			emit(EventLoadBalancer, lb.Name)
		}
	}
}

func (c *Cloud) dropInstanceTargetsLocked(id string, emit emitFunc) {
	for _, lb := range c.lbs {
		if lb.TargetType != TargetTypeInstance {
			continue
		}
		i := firstTarget(lb.Targets, id)
		j := i
		for j < len(lb.Targets) && lb.Targets[j].ID == id {
			j++
		}
		if j > i {
			lb.Targets = slices.Delete(lb.Targets, i, j)
			emit(EventLoadBalancer, lb.Name)
		}
	}
}

func firstTarget(ts []Target, id string) int {
	i, _ := slices.BinarySearchFunc(ts, id, func(t Target, id string) int { return strings.Compare(t.ID, id) })
	return i
}

func compareTargets(a, b Target) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(a.Port, b.Port))
}

// validateLBName applies ELB's naming rule; the Service controller's
// generated names ("a" + UID without dashes, cut to 32) always pass it.
func validateLBName(name string) error {
	bad := name == "" || len(name) > 32 || name[0] == '-' || name[len(name)-1] == '-'
	for i := 0; !bad && i < len(name); i++ {
		ch := name[i]
		bad = !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-')
	}
	if bad {
		return errorf(ErrValidation, "Load balancer name '%s' must be 1-32 characters of a-z, A-Z, 0-9 and '-', and must not begin or end with '-'", name)
	}
	return nil
}

func normalizeListeners(ls []Listener) ([]Listener, error) {
	if len(ls) == 0 {
		return nil, errorf(ErrValidation, "Listeners must contain at least one listener")
	}
	out := make([]Listener, len(ls))
	seen := map[Listener]bool{}
	for i, l := range ls {
		l.Protocol = strings.ToUpper(cmp.Or(l.Protocol, "TCP"))
		if l.Protocol != "TCP" && l.Protocol != "UDP" {
			return nil, errorf(ErrValidation, "Listener protocol '%s' must be TCP or UDP", l.Protocol)
		}
		if l.Port < 1 || l.Port > 65535 {
			return nil, errorf(ErrValidation, "Listener port %d must be between 1 and 65535", l.Port)
		}
		if l.TargetPort < 1 || l.TargetPort > 65535 {
			return nil, errorf(ErrValidation, "Listener target port %d must be between 1 and 65535", l.TargetPort)
		}
		key := Listener{Protocol: l.Protocol, Port: l.Port}
		if seen[key] {
			return nil, errorf(ErrValidation, "Duplicate listener %d/%s", l.Port, l.Protocol)
		}
		seen[key] = true
		out[i] = l
	}
	return out, nil
}

func normalizeHealthCheck(hc HealthCheck) (HealthCheck, error) {
	hc.Protocol = strings.ToUpper(cmp.Or(hc.Protocol, "TCP"))
	switch hc.Protocol {
	case "TCP":
		if hc.Path != "" {
			return hc, errorf(ErrValidation, "Health check path '%s' is only valid for HTTP and HTTPS checks", hc.Path)
		}
	case "HTTP", "HTTPS":
		hc.Path = cmp.Or(hc.Path, "/")
		if !strings.HasPrefix(hc.Path, "/") {
			return hc, errorf(ErrValidation, "Health check path '%s' must begin with '/'", hc.Path)
		}
	default:
		return hc, errorf(ErrValidation, "Health check protocol '%s' must be one of [TCP, HTTP, HTTPS]", hc.Protocol)
	}
	if hc.Port < 1 || hc.Port > 65535 {
		return hc, errorf(ErrValidation, "Health check port %d must be between 1 and 65535", hc.Port)
	}
	hc.IntervalSeconds = cmp.Or(hc.IntervalSeconds, 10)
	hc.HealthyThreshold = cmp.Or(hc.HealthyThreshold, 2)
	hc.UnhealthyThreshold = cmp.Or(hc.UnhealthyThreshold, 6)
	if hc.IntervalSeconds < 5 || hc.IntervalSeconds > 300 {
		return hc, errorf(ErrValidation, "Health check interval %ds must be between 5 and 300 seconds", hc.IntervalSeconds)
	}
	if hc.HealthyThreshold < 2 || hc.HealthyThreshold > 10 {
		return hc, errorf(ErrValidation, "Healthy threshold %d must be between 2 and 10", hc.HealthyThreshold)
	}
	if hc.UnhealthyThreshold < 2 || hc.UnhealthyThreshold > 10 {
		return hc, errorf(ErrValidation, "Unhealthy threshold %d must be between 2 and 10", hc.UnhealthyThreshold)
	}
	return hc, nil
}

func summarizeListeners(ls []Listener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		l.Protocol = cmp.Or(l.Protocol, "TCP")
		parts[i] = l.String()
	}
	return summarize(parts)
}

func summarizeTargets(ts []Target) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.ID + ":" + strconv.Itoa(int(t.Port))
	}
	return summarize(parts)
}

func parseAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}
