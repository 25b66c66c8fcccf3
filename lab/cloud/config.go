package cloud

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/ippool"
)

// Ingress modes: how a load balancer is reached, which decides what the
// Service controller writes into status.loadBalancer.ingress.
const (
	IngressHostname = "hostname" // AWS style: a DNS name per load balancer
	IngressIP       = "ip"       // GCP/MetalLB style: an IP per load balancer
)

// Config describes the simulated cloud. The zero value is usable: New fills
// every empty field with the default documented on it.
type Config struct {
	Region string // default "ap-northeast-1"
	// Zones default to <region>a, <region>c, <region>d (ap-northeast-1 has no
	// usable "b", and students meet that oddity in the real console).
	Zones []string
	// VPCCIDR is an IPv4 network between /8 and /24. It is cut into equal
	// subnets (a /20 per zone for the default /16), one per zone; instance
	// private IPs come from their zone's subnet.
	VPCCIDR string // default "10.0.0.0/16"
	// Domain is the lab's DNS domain; load balancer DNS names are
	// "<name>-<10 digits>.elb.<region>.<domain>".
	Domain string // default "ccmlab.internal"
	// IngressMode is IngressHostname (default) or IngressIP; in ip mode each
	// load balancer gets an address from LBCIDR instead of a DNS name.
	IngressMode string
	LBCIDR      string // default "198.51.100.0/24" (TEST-NET-2); at most /30
	// DefaultInstanceType is used when RunInstanceInput.InstanceType is empty.
	DefaultInstanceType string // default "m5.large"
	// HostName, when set, names a new instance (its Name and
	// PrivateDNSName, so the Node its kubelet registers) from its ID and
	// tags instead of EC2's ip-<address>.<region>.compute.internal: the
	// kubevirt profile's VMs are named as Cluster API names Machines. It
	// must return a DNS label, unique per ID.
	HostName func(id string, tags map[string]string) string
	// StatePath is a JSON file holding instances, load balancers and routes.
	// "" keeps everything in memory. New loads it when it exists.
	StatePath string
	// Files writes the state file (default datafs.OS{}); tests inject a
	// datafs.Switch to make the disk full.
	Files datafs.Writer
	Clock clock.WithTicker // default clock.RealClock{}
	// ClusterID is the value of the kubernetes.io/cluster/<id> tags on the
	// AWS model's subnets, route table and node security group, and the
	// KubernetesClusterID the upstream AWS provider is configured with.
	ClusterID string // default "ccmlab"
	// CallLogSize bounds the call log ring buffer.
	CallLogSize int // default 5000
	// Quotas are the account's service quotas (quotas.go); a zero field
	// takes DefaultQuotas' value.
	Quotas Quotas
	// InstanceTransition is how long an instance holds pending, stopping
	// and shutting-down before running, stopped and terminated. 0 (the
	// default) reaches the end state inside the call; `ccmlab serve` sets
	// DefaultInstanceTransition. At most MaxInstanceTransition.
	InstanceTransition time.Duration
}

// DefaultInstanceTransition is the served lab's InstanceTransition: long
// enough to see stopping or pending in a describe right after the call,
// short against EC2's own (up to minutes) so that a class does not wait.
const DefaultInstanceTransition = 3 * time.Second

// MaxInstanceTransition bounds InstanceTransition.
const MaxInstanceTransition = 5 * time.Minute

const (
	defaultRegion       = "ap-northeast-1"
	defaultVPCCIDR      = "10.0.0.0/16"
	defaultDomain       = "ccmlab.internal"
	defaultLBCIDR       = "198.51.100.0/24"
	defaultInstanceType = "m5.large"
	defaultCallLogSize  = 5000
	defaultClusterID    = "ccmlab"

	// 4 extra bits give 16 subnets: room for every real region's zones while
	// keeping AWS's familiar /16 VPC -> /20 subnet shape.
	minSubnetBits = 4
	// Below /28 a subnet has too few addresses to be worth a zone (AWS has
	// the same floor).
	maxSubnetPrefix = 28
	// AWS keeps the first four addresses of every subnet (network, router,
	// DNS, future use) and the last one; mirroring that makes the first
	// instance 10.0.0.4, as students see in a real VPC.
	subnetReservedLow = 4
)

func (c *Config) setDefaults() {
	if c.Region == "" {
		c.Region = defaultRegion
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{c.Region + "a", c.Region + "c", c.Region + "d"}
	} else {
		// Copy so a caller reusing its slice cannot change our zones.
		c.Zones = slices.Clone(c.Zones)
	}
	if c.VPCCIDR == "" {
		c.VPCCIDR = defaultVPCCIDR
	}
	if c.Domain == "" {
		c.Domain = defaultDomain
	}
	if c.IngressMode == "" {
		c.IngressMode = IngressHostname
	}
	if c.LBCIDR == "" {
		c.LBCIDR = defaultLBCIDR
	}
	if c.DefaultInstanceType == "" {
		c.DefaultInstanceType = defaultInstanceType
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Files == nil {
		c.Files = datafs.OS{}
	}
	if c.ClusterID == "" {
		c.ClusterID = defaultClusterID
	}
	if c.CallLogSize == 0 {
		c.CallLogSize = defaultCallLogSize
	}
	c.Quotas.setDefaults()
}

// validate checks a Config after defaults are applied and says what is wrong
// in terms a lab operator can act on.
func (c *Config) validate() error {
	var errs []error
	if !isDNSName(c.Region) {
		errs = append(errs, fmt.Errorf("region %q: want lowercase letters, digits and hyphens, like %q", c.Region, defaultRegion))
	}
	if len(c.Zones) == 0 {
		errs = append(errs, errors.New("zones: at least one zone is required"))
	}
	seen := map[string]bool{}
	for i, z := range c.Zones {
		switch {
		case z == "":
			errs = append(errs, fmt.Errorf("zones[%d]: empty zone name", i))
		case !isDNSName(z):
			errs = append(errs, fmt.Errorf("zones[%d] %q: want lowercase letters, digits and hyphens, like %q", i, z, c.Region+"a"))
		case seen[z]:
			errs = append(errs, fmt.Errorf("zones[%d] %q: listed twice", i, z))
		}
		seen[z] = true
	}
	vpc, err := parseNetwork("VPCCIDR", c.VPCCIDR)
	if err != nil {
		errs = append(errs, err)
	} else if vpc.Bits() < 8 || vpc.Bits() > 24 {
		errs = append(errs, fmt.Errorf("VPCCIDR %q: prefix length must be between /8 and /24", c.VPCCIDR))
	} else if len(c.Zones) > 0 {
		if _, err := subnetPrefixLen(vpc, len(c.Zones)); err != nil {
			errs = append(errs, err)
		}
	}
	if !isDNSName(c.Domain) {
		errs = append(errs, fmt.Errorf("domain %q: want a DNS name like %q", c.Domain, defaultDomain))
	}
	switch c.IngressMode {
	case IngressHostname, IngressIP:
	default:
		errs = append(errs, fmt.Errorf("ingress mode %q: want %q or %q", c.IngressMode, IngressHostname, IngressIP))
	}
	lb, err := parseNetwork("LBCIDR", c.LBCIDR)
	if err != nil {
		errs = append(errs, err)
	} else if lb.Bits() > 30 {
		errs = append(errs, fmt.Errorf("LBCIDR %q: prefix length must be /30 or shorter to leave usable addresses", c.LBCIDR))
	} else if vpc.IsValid() && vpc.Overlaps(lb) {
		errs = append(errs, fmt.Errorf("LBCIDR %q overlaps VPCCIDR %q: load balancer and instance addresses would collide", c.LBCIDR, c.VPCCIDR))
	}
	if msg := instanceTypeProblem(c.DefaultInstanceType); msg != "" {
		errs = append(errs, fmt.Errorf("default instance type: %s", msg))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("clock: must not be nil"))
	}
	if !isDNSName(c.ClusterID) || strings.Contains(c.ClusterID, ".") {
		errs = append(errs, fmt.Errorf("cluster ID %q: want lowercase letters, digits and hyphens, like %q", c.ClusterID, defaultClusterID))
	}
	if c.InstanceTransition < 0 || c.InstanceTransition > MaxInstanceTransition {
		errs = append(errs, fmt.Errorf("instance transition %s: must be 0 to %s", c.InstanceTransition, MaxInstanceTransition))
	}
	if c.CallLogSize < 1 {
		errs = append(errs, fmt.Errorf("call log size %d: must be positive", c.CallLogSize))
	}
	if err := c.Quotas.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cloud: invalid config: %w", err)
	}
	return nil
}

func parseNetwork(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%s %q: not a CIDR block like %q", field, s, "10.0.0.0/16")
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s %q: only IPv4 is supported", field, s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%s %q: host bits are set; did you mean %q?", field, s, p.Masked().String())
	}
	return p, nil
}

func subnetPrefixLen(vpc netip.Prefix, zones int) (int, error) {
	bits := minSubnetBits
	for 1<<bits < zones {
		bits++
	}
	if vpc.Bits()+bits > maxSubnetPrefix {
		return 0, fmt.Errorf("VPCCIDR %s is too small for %d zones: each zone needs at least a /%d subnet", vpc, zones, maxSubnetPrefix)
	}
	return vpc.Bits() + bits, nil
}

// isDNSName accepts dot-separated labels of lowercase letters, digits and
// inner hyphens: enough to keep generated DNS names and node names valid.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			ch := label[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
				return false
			}
		}
	}
	return true
}

// network is the address layout derived from Config: one pool per zone and
// one for load balancer IPs.
type network struct {
	vpc     netip.Prefix
	subnets map[string]*ippool.Pool
	lb      *ippool.Pool
}

func newNetwork(cfg *Config) *network {
	// Errors were ruled out by validate.
	vpc, _ := parseNetwork("VPCCIDR", cfg.VPCCIDR)
	lb, _ := parseNetwork("LBCIDR", cfg.LBCIDR)
	plen, _ := subnetPrefixLen(vpc, len(cfg.Zones))
	n := &network{vpc: vpc, subnets: make(map[string]*ippool.Pool, len(cfg.Zones)), lb: mustPool(lb, 1, 1)}
	base := ippool.ToUint32(vpc.Addr())
	step := uint32(1) << (32 - plen)
	for i, z := range cfg.Zones {
		sub := netip.PrefixFrom(ippool.FromUint32(base+uint32(i)*step), plen)
		n.subnets[z] = mustPool(sub, subnetReservedLow, 1)
	}
	return n
}

// mustPool is for prefixes validate has already checked.
func mustPool(p netip.Prefix, reservedLow, reservedHigh uint32) *ippool.Pool {
	pool, err := ippool.New(p, reservedLow, reservedHigh)
	if err != nil {
		panic("cloud: validated network has an unusable prefix: " + err.Error())
	}
	return pool
}
