package awslimits

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		key      string
		capacity float64
		refill   float64
	}{
		// AWS's own example: DescribeHosts, non-mutating, 100 and 20.
		{"ec2:DescribeHosts", 100, 20},
		{"ec2:DescribeRouteTables", 100, 20},
		{"ec2:DescribeInstances", 50, 10},
		{"ec2:DescribeSecurityGroups", 50, 10},
		{"ec2:CreateRoute", 50, 5},
		{"ec2:ModifyInstanceAttribute", 50, 5},
		{"ec2:AuthorizeSecurityGroupIngress", 50, 5},
		{"elasticloadbalancing:CreateLoadBalancer", 10, 0.2},
		{"elasticloadbalancing:RegisterInstancesWithLoadBalancer", 20, 4},
		{"elasticloadbalancing:DescribeLoadBalancers", 40, 10},
		{"elasticloadbalancing:ConfigureHealthCheck", 20, 3},
		{ELBAccount, 40, 10},
	} {
		t.Run(tc.key, func(t *testing.T) {
			b, ok := Of(tc.key)
			if !ok || b.Capacity != tc.capacity || b.Refill != tc.refill {
				t.Errorf("Of(%q) = %+v, %v; want %v + %v/s", tc.key, b, ok, tc.capacity, tc.refill)
			}
		})
	}
	if _, ok := Of("s3:GetObject"); ok {
		t.Error("a service without figures has a bucket")
	}
}

func TestReplay(t *testing.T) {
	b := Bucket{Capacity: 10, Refill: 2}
	for _, tc := range []struct {
		name    string
		calls   map[int64]int
		want    bool
		at      int64
		refused int
	}{
		{"a burst the bucket holds", map[int64]int{100: 10}, false, 0, 0},
		{"one call past the burst", map[int64]int{100: 11}, true, 0, 1},
		// 10 at once empty it; 4 s later 8 tokens are back.
		{"refilled after a pause", map[int64]int{100: 10, 104: 8}, false, 0, 0},
		{"not refilled enough", map[int64]int{100: 10, 104: 9}, true, 4, 1},
		// Steady at the refill rate holds forever; above it, the burst
		// runs out: the first second leaves 7 tokens, each next one takes
		// 3 and gives back 2, so second 8 finds 2 and refuses one, and so
		// every second after it.
		{"steady at the refill rate", steady(100, 60, 2), false, 0, 0},
		{"steady above it", steady(100, 60, 3), true, 8, 52},
		{"the run starts before its first call", map[int64]int{105: 10}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, ok := Replay(b, tc.calls, 100)
			if ok != tc.want || th.At != tc.at || th.Refused != tc.refused {
				t.Errorf("Replay = %+v, %v; want at %d, %d refused, %v", th, ok, tc.at, tc.refused, tc.want)
			}
		})
	}
}

func steady(from int64, seconds, perSecond int) map[int64]int {
	m := map[int64]int{}
	for i := range int64(seconds) {
		m[from+i] = perSecond
	}
	return m
}
