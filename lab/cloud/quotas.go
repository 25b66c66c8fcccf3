package cloud

import (
	"errors"
	"fmt"

	"github.com/ccmlab/ccmlab/internal/labapi"
)

// Quotas are the lab's service quotas: what one lab's cloud account may
// hold. They are modelled on AWS's documented default quotas, and a lab's
// quota may be lower than AWS's default, as an account's can be. Where the
// lab keeps AWS's figure it says so; where it scales it down, the reason
// is the machine a class shares (docs/aws.md, docs/security.md).
//
// A call past a quota fails with the code the service's API reference
// documents for it (TooManyLoadBalancers, TooManyListeners,
// TooManyTargetGroups, TooManyTargets) and changes nothing.
type Quotas struct {
	// ListenerSockets bounds the TCP listeners of every load balancer of
	// the lab together: the lab's own, the Classic ELBs and the NLBs. The
	// data plane gives each of them a real socket on 127.0.0.1, taken
	// from the host's ephemeral port range that every lab of a class and
	// the portal share; AWS has no such quota. Default 100.
	ListenerSockets int `json:"listenerSockets"`

	// The lab's own load balancers (the lab provider's): AWS-shaped, so
	// the Classic ELB's regional quota and the NLB's per-load-balancer
	// listener quota. Defaults 20, 50 and 1,000 targets (as an NLB target
	// group's).
	LoadBalancers            int `json:"loadBalancers"`
	ListenersPerLoadBalancer int `json:"listenersPerLoadBalancer"`
	TargetsPerLoadBalancer   int `json:"targetsPerLoadBalancer"`

	// Classic Load Balancers: AWS's defaults, 20 per Region and 100
	// listeners each.
	ClassicLoadBalancers   int `json:"classicLoadBalancers"`
	ClassicListenersPerELB int `json:"classicListenersPerELB"`

	// Network Load Balancers and target groups: AWS's defaults of 50 per
	// Region, 50 listeners each and 1,000 targets per target group; target
	// groups 200 instead of AWS's 3,000 (each holds up to 1,000 targets in
	// the lab's memory, and no more than ListenerSockets of them can carry
	// traffic).
	NetworkLoadBalancers  int `json:"networkLoadBalancers"`
	NetworkListenersPerLB int `json:"networkListenersPerLB"`
	TargetGroups          int `json:"targetGroups"`
	TargetsPerTargetGroup int `json:"targetsPerTargetGroup"`
}

// The defaults. AWS's figures are from "Quotas for your Classic Load
// Balancer" and "Quotas for your Network Load Balancers" (URLs in
// docs/aws.md); AWS's 3,000 target groups per Region is the one figure
// scaled down besides the listener sockets AWS does not have.
const (
	DefaultListenerSockets    = labapi.DefaultListenerSockets
	defaultLoadBalancers      = 20
	defaultListenersPerLB     = 50
	defaultTargetsPerLB       = 1000
	awsClassicLoadBalancers   = 20
	awsClassicListenersPerELB = 100
	awsNetworkLoadBalancers   = 50
	awsNetworkListenersPerLB  = 50
	defaultTargetGroups       = 200
	awsTargetsPerTargetGroup  = 1000
	maxQuota                  = 1_000_000
)

// DefaultQuotas are a lab's quotas when Config.Quotas leaves them zero.
func DefaultQuotas() Quotas {
	return Quotas{
		ListenerSockets:          DefaultListenerSockets,
		LoadBalancers:            defaultLoadBalancers,
		ListenersPerLoadBalancer: defaultListenersPerLB,
		TargetsPerLoadBalancer:   defaultTargetsPerLB,
		ClassicLoadBalancers:     awsClassicLoadBalancers,
		ClassicListenersPerELB:   awsClassicListenersPerELB,
		NetworkLoadBalancers:     awsNetworkLoadBalancers,
		NetworkListenersPerLB:    awsNetworkListenersPerLB,
		TargetGroups:             defaultTargetGroups,
		TargetsPerTargetGroup:    awsTargetsPerTargetGroup,
	}
}

// ScaleQuotas are roomy quotas for a benchmark that makes n load
// balancers of one listener each (the 1,000-Service scale runs); a
// student's lab never has them.
func ScaleQuotas(n int) Quotas {
	q := DefaultQuotas()
	q.ListenerSockets = max(q.ListenerSockets, n)
	q.LoadBalancers = max(q.LoadBalancers, n)
	q.ClassicLoadBalancers = max(q.ClassicLoadBalancers, n)
	q.NetworkLoadBalancers = max(q.NetworkLoadBalancers, n)
	q.TargetGroups = max(q.TargetGroups, n)
	return q
}

// fields lists every quota by its field name, for defaults and validate.
func (q *Quotas) fields() []struct {
	name string
	v    *int
} {
	return []struct {
		name string
		v    *int
	}{
		{"ListenerSockets", &q.ListenerSockets},
		{"LoadBalancers", &q.LoadBalancers},
		{"ListenersPerLoadBalancer", &q.ListenersPerLoadBalancer},
		{"TargetsPerLoadBalancer", &q.TargetsPerLoadBalancer},
		{"ClassicLoadBalancers", &q.ClassicLoadBalancers},
		{"ClassicListenersPerELB", &q.ClassicListenersPerELB},
		{"NetworkLoadBalancers", &q.NetworkLoadBalancers},
		{"NetworkListenersPerLB", &q.NetworkListenersPerLB},
		{"TargetGroups", &q.TargetGroups},
		{"TargetsPerTargetGroup", &q.TargetsPerTargetGroup},
	}
}

func (q *Quotas) setDefaults() {
	d := DefaultQuotas()
	def := d.fields()
	for i, f := range q.fields() {
		if *f.v == 0 {
			*f.v = *def[i].v
		}
	}
}

func (q *Quotas) validate() error {
	var errs []error
	for _, f := range q.fields() {
		if *f.v < 1 || *f.v > maxQuota {
			errs = append(errs, fmt.Errorf("quota %s %d: must be between 1 and %d", f.name, *f.v, maxQuota))
		}
	}
	return errors.Join(errs...)
}

// Quota error codes, as the Elastic Load Balancing API references document
// them (docs/aws.md has the URLs).
const (
	ErrTooManyLoadBalancers = "TooManyLoadBalancers"
	ErrTooManyListeners     = "TooManyListeners"
	ErrTooManyTargetGroups  = "TooManyTargetGroups"
	ErrTooManyTargets       = "TooManyTargets"
)

// How the API references describe each error; a quota message starts with
// the description and goes on with the lab's quota and what to do.
const (
	descClassicTooManyLBs = "The quota for the number of load balancers has been reached"
	descTooManyLBs        = "You've reached the limit on the number of load balancers for your AWS account"
	descTooManyListeners  = "You've reached the limit on the number of listeners per load balancer"
	descTooManyTGs        = "You've reached the limit on the number of target groups for your AWS account"
	descTooManyTargets    = "You've reached the limit on the number of targets"
	descInvalidConfig     = "The requested configuration change is not valid"
)

// quotaError is a quota's refusal: the API reference's description, the
// lab's quota, how much is in use, and what to do.
func quotaError(code, desc, quota, usage, remedy string) error {
	return errorf(code, "%s: %s; %s. %s (a lab's quota can be lower than AWS's default, as an account's can; docs/aws.md lists them)", desc, quota, usage, remedy)
}

// listenerSocketsLocked counts the listeners the data plane opens a socket
// for: every TCP listener of the lab's own load balancers, every Classic
// ELB listener (TLS ends at the ELB, a TCP connection goes on), every NLB
// listener but UDP.
func (c *Cloud) listenerSocketsLocked() int {
	n := 0
	for _, lb := range c.lbs {
		n += socketListeners(lb.Listeners)
	}
	for _, lb := range c.aws.elbs {
		n += len(lb.Listeners)
	}
	for _, l := range c.aws.lsns {
		if socketProtocol(l.Protocol) {
			n++
		}
	}
	return n
}

func socketListeners(ls []Listener) int {
	n := 0
	for _, l := range ls {
		if socketProtocol(l.Protocol) {
			n++
		}
	}
	return n
}

// sockets is how many sockets a listener of protocol p takes: 1 or 0.
func sockets(p string) int {
	if socketProtocol(p) {
		return 1
	}
	return 0
}

// socketProtocol reports whether a listener of this protocol gets a socket
// in the data plane (HTTP does not run over UDP).
func socketProtocol(p string) bool { return p != "UDP" }

// checkSocketsLocked refuses a change that takes the lab's listener
// sockets past ListenerSockets: removed of those in use go, added come.
// code and desc are what the calling action documents for it.
func (c *Cloud) checkSocketsLocked(code, desc string, removed, added int) error {
	if added <= removed {
		return nil
	}
	q := c.cfg.Quotas.ListenerSockets
	inUse := c.listenerSocketsLocked()
	if inUse-removed+added <= q {
		return nil
	}
	return quotaError(code, desc,
		fmt.Sprintf("this lab's load balancers may have %d listeners in all (each listener is a real port on the machine the lab runs on)", q),
		fmt.Sprintf("%d are in use and this call would add %d", inUse, added-removed),
		"Delete a load balancer or a listener first.")
}
