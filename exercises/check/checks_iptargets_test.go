package check

import (
	"testing"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

func ipTargetCases() []checkCase {
	cut := format.CheckSpec{Kind: "ipTargetsReached", Name: "reach", State: "cut"}
	all := format.CheckSpec{Kind: "ipTargetsReached", Name: "reach", State: "all"}
	// routed gives Service reach an ip-mode load balancer with one target
	// of the given health, with or without the route of its podCIDR.
	routed := func(route bool, h cloud.TargetHealth) func(f *fixture) {
		return func(f *fixture) {
			inst := f.launch()
			if route {
				f.route("10.244.7.0/24", inst.ID)
			}
			f.lb(f.svc("reach"), cloud.TargetTypeIP, 0, "10.244.7.5:80="+string(h))
		}
	}
	return []checkCase{
		{"route gone, target unhealthy", cut, routed(false, cloud.TargetUnhealthy), true},
		{"route there", cut, routed(true, cloud.TargetHealthy), false},
		{"route gone, health not checked yet", cut, routed(false, cloud.TargetHealthy), false},
		{"instance mode", cut, func(f *fixture) { f.lb(f.svc("reach"), cloud.TargetTypeInstance, 0) }, false},
		{"routed and healthy", all, routed(true, cloud.TargetHealthy), true},
		{"routed, not healthy yet", all, routed(true, cloud.TargetUnhealthy), false},
		{"no route", all, routed(false, cloud.TargetUnhealthy), false},
		{"no load balancer", all, func(f *fixture) { f.svc("reach") }, false},
	}
}

func TestCoveredBy(t *testing.T) {
	routes := []cloud.Route{{DestinationCIDR: "10.244.1.0/24", InstanceID: "i-1"}, {DestinationCIDR: "10.244.2.0/24", InstanceID: "i-2", State: cloud.RouteBlackhole}}
	for _, tc := range []struct{ ip, want string }{
		{"10.0.1.9", "vpc"},
		{"10.244.1.5", "10.244.1.0/24"},
		{"10.244.2.5", ""}, // a blackhole carries nothing
		{"10.244.3.5", ""},
		{"not-an-ip", ""},
	} {
		if got := coveredBy(tc.ip, "10.0.0.0/16", routes); got != tc.want {
			t.Errorf("coveredBy(%s) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}
