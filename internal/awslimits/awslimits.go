package awslimits

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Bucket is one documented token bucket.
type Bucket struct {
	Capacity float64 // the most tokens it holds: the burst
	Refill   float64 // tokens added per second
	Category string  // AWS's name for the actions that share these figures
}

// The buckets, from "Request throttling for the Amazon EC2 API"
// (https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html)
// and "API request throttling for Elastic Load Balancing"
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html).
var (
	ec2NonMutating = Bucket{100, 20, "EC2 non-mutating"}
	// DescribeInstances and DescribeSecurityGroups asked for without a
	// filter or pagination take a smaller bucket. cloud-provider-aws asks
	// for instances and groups by ID, with neither, in most of its calls
	// (pkg/providers/v1/aws.go), so the smaller bucket is theirs.
	ec2Unfiltered     = Bucket{50, 10, "EC2 unfiltered and unpaginated non-mutating"}
	ec2Mutating       = Bucket{50, 5, "EC2 mutating"}
	ec2Intensive      = Bucket{50, 5, "EC2 resource-intensive"}
	elbNonMutating    = Bucket{40, 10, "ELB non-mutating"}
	elbMutating       = Bucket{20, 3, "ELB mutating"}
	elbRegistration   = Bucket{20, 4, "ELB registration"}
	elbIntensive      = Bucket{10, 0.2, "ELB resource-intensive"}
	elbAccount        = Bucket{40, 10, "ELB account (every action of one API version)"}
	ec2IntensiveNames = []string{"AcceptVpcPeeringConnection", "AuthorizeSecurityGroupIngress", "CancelSpotInstanceRequests",
		"CreateKeyPair", "CreateVpcPeeringConnection", "DeleteVpcPeeringConnection", "RejectVpcPeeringConnection",
		"RevokeSecurityGroupIngress", "RequestSpotInstances"}
	ec2UnfilteredNames = []string{"DescribeInstances", "DescribeSecurityGroups"}
)

// ELBAccount is the key of the bucket every Elastic Load Balancing action
// of one API version shares besides its own.
const ELBAccount = "elasticloadbalancing:*"

// Of returns the bucket of a call given as "service:Action" (the lab's
// call log's service names: ec2, elasticloadbalancing), or ELBAccount.
// ok is false for a service this package has no figures for. EC2 actions
// not named by AWS as resource-intensive fall under the general rule:
// Describe*, List*, Search* and Get* are non-mutating, the rest mutating.
// A few EC2 actions (RunInstances among them) have buckets of their own
// that this package does not hold; it is used for what cloud-provider-aws
// calls.
func Of(key string) (Bucket, bool) {
	if key == ELBAccount {
		return elbAccount, true
	}
	service, action, ok := strings.Cut(key, ":")
	if !ok {
		return Bucket{}, false
	}
	readOnly := strings.HasPrefix(action, "Describe") || strings.HasPrefix(action, "List") ||
		strings.HasPrefix(action, "Search") || strings.HasPrefix(action, "Get")
	switch service {
	case "ec2":
		switch {
		case slices.Contains(ec2UnfilteredNames, action):
			return ec2Unfiltered, true
		case slices.Contains(ec2IntensiveNames, action):
			return ec2Intensive, true
		case readOnly:
			return ec2NonMutating, true
		}
		return ec2Mutating, true
	case "elasticloadbalancing":
		switch action {
		// Both API versions' actions: ELB (Classic) and ELBv2.
		case "CreateLoadBalancer", "AttachLoadBalancerToSubnets", "DetachLoadBalancerFromSubnets",
			"EnableAvailabilityZonesForLoadBalancer", "DisableAvailabilityZonesForLoadBalancer", "SetSubnets":
			return elbIntensive, true
		case "RegisterInstancesWithLoadBalancer", "DeregisterInstancesFromLoadBalancer", "RegisterTargets", "DeregisterTargets":
			return elbRegistration, true
		}
		if readOnly {
			return elbNonMutating, true
		}
		return elbMutating, true
	}
	return Bucket{}, false
}

// String is the bucket as AWS's pages give it: capacity + refill per second.
func (b Bucket) String() string { return fmt.Sprintf("%g + %g/s", b.Capacity, b.Refill) }

// Throttle is what a bucket would have done to a run's calls.
type Throttle struct {
	// At is the first second (from the run's start) in which a call would
	// have been refused.
	At int64
	// Refused counts the calls a bucket would have refused at first try.
	// The replay does not model the SDK's retries, which would move them
	// later and refuse some again: it says where and how much, not what
	// a real run would have become.
	Refused int
}

// Replay passes a run's calls, counted per second (Unix seconds), through
// b, full at the run's start, and says whether and when it would have
// refused one.
func Replay(b Bucket, perSecond map[int64]int, start int64) (Throttle, bool) {
	if len(perSecond) == 0 {
		return Throttle{}, false
	}
	secs := slices.Sorted(maps.Keys(perSecond))
	tokens, last := b.Capacity, min(start, secs[0])
	var th Throttle
	throttled := false
	for _, s := range secs {
		tokens = min(b.Capacity, tokens+float64(s-last)*b.Refill)
		last = s
		calls := perSecond[s]
		allowed := min(calls, int(math.Floor(tokens)))
		tokens -= float64(allowed)
		if allowed < calls {
			if !throttled {
				th.At, throttled = s-start, true
			}
			th.Refused += calls - allowed
		}
	}
	return th, throttled
}
