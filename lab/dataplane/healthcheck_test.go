package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestHealthThresholds: a target's state changes only after the threshold
// count of consecutive results, each check one scaled interval after the
// last; a round before a check is due counts nothing.
func TestHealthThresholds(t *testing.T) {
	// Node B has the Service's local endpoint, node A none: under Local,
	// kube-proxy answers A's checks 503 and B's 200.
	check := func(kind string) *cloud.HealthCheck {
		return &cloud.HealthCheck{Protocol: "HTTP", Port: 32000, Path: "/healthz", IntervalSeconds: 10, TimeoutSeconds: 5,
			HealthyThreshold: 2, UnhealthyThreshold: 3}
	}
	type step struct {
		after time.Duration // since the previous round
		a, b  string        // health[/code] of A's and B's targets after the round
	}
	tests := []struct {
		name   string
		kind   string
		startA cloud.TargetHealth
		steps  []step
	}{
		{name: "classic: in service after HealthyThreshold passes, out after UnhealthyThreshold failures", kind: cloud.LBKindClassic, steps: []step{
			{0, "initial/Elb.InitialHealthChecking", "initial/Elb.InitialHealthChecking"},
			{500 * time.Millisecond, "initial/Elb.InitialHealthChecking", "initial/Elb.InitialHealthChecking"}, // not due: nothing counted
			{500 * time.Millisecond, "initial/Elb.InitialHealthChecking", "healthy"},
			{time.Second, "unhealthy/Target.ResponseCodeMismatch", "healthy"},
			{time.Second, "unhealthy/Target.ResponseCodeMismatch", "healthy"},
		}},
		{name: "NLB: in service after one pass", kind: cloud.LBKindNetwork, steps: []step{
			{0, "initial/Elb.InitialHealthChecking", "healthy"},
			{time.Second, "initial/Elb.InitialHealthChecking", "healthy"},
			{time.Second, "unhealthy/Target.ResponseCodeMismatch", "healthy"},
		}},
		{name: "a healthy target stays in service until UnhealthyThreshold failures", kind: cloud.LBKindClassic, startA: cloud.TargetHealthy, steps: []step{
			{0, "healthy", "initial/Elb.InitialHealthChecking"},
			{time.Second, "healthy", "healthy"},
			{time.Second, "unhealthy/Target.ResponseCodeMismatch", "healthy"},
		}},
		{name: "the lab's own load balancer: Classic ELB's rules", kind: "", steps: []step{
			{0, "initial/Elb.InitialHealthChecking", "initial/Elb.InitialHealthChecking"},
			{time.Second, "initial/Elb.InitialHealthChecking", "healthy"},
			{time.Second, "unhealthy/Target.ResponseCodeMismatch", "healthy"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(local)
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			lb := instanceLB(orHealth(tc.startA, cloud.TargetInitial), cloud.TargetInitial, "")
			lb.Kind = tc.kind
			lb.HealthCheck = check(tc.kind)
			w.state.LoadBalancers = []cloud.LoadBalancer{lb}
			clk := testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
			d := newStaticDataplane(&w.objs, w.state, false, clk)
			for i, s := range tc.steps {
				clk.Step(s.after)
				d.healthRound(d.cloudView.Load(), clk.Now())
				h := d.health()
				got := func(id string) string {
					st := h.st[hcKey{"aweb", id, 30080}]
					if st == nil {
						return "none"
					}
					if st.health == cloud.TargetHealthy {
						return string(st.health)
					}
					return fmt.Sprintf("%s/%s", st.health, st.code)
				}
				if a, b := got(instA), got(instB); a != s.a || b != s.b {
					t.Errorf("round %d: A %s, B %s; want A %s, B %s", i, a, b, s.a, s.b)
				}
			}
		})
	}
}

func orHealth(h, def cloud.TargetHealth) cloud.TargetHealth {
	if h == "" {
		return def
	}
	return h
}

// TestHealthTimeScale: the factor divides AWS's intervals and timeouts;
// the lab's own load balancers take the in-tree provider's defaults.
func TestHealthTimeScale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale int
		lb    cloud.LoadBalancer
		want  hcParams
	}{
		{"NLB defaults, scale 10", 10, cloud.LoadBalancer{Kind: cloud.LBKindNetwork, HealthCheck: &cloud.HealthCheck{IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3}},
			hcParams{interval: 3 * time.Second, timeout: time.Second, healthy: 3, unhealthy: 3, nlb: true}},
		{"Classic, AWS's own times", 1, cloud.LoadBalancer{Kind: cloud.LBKindClassic, HealthCheck: &cloud.HealthCheck{IntervalSeconds: 10, TimeoutSeconds: 5, HealthyThreshold: 2, UnhealthyThreshold: 6}},
			hcParams{interval: 10 * time.Second, timeout: 5 * time.Second, healthy: 2, unhealthy: 6}},
		{"the lab's own, no check set", 10, cloud.LoadBalancer{},
			hcParams{interval: time.Second, timeout: 500 * time.Millisecond, healthy: 2, unhealthy: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Dataplane{cfg: Config{HealthCheckTimeScale: tc.scale}}
			if got := d.params(&tc.lb); got != tc.want {
				t.Errorf("params = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestHealthCheckTimeScaleBounds: the factor is bounded.
func TestHealthCheckTimeScaleBounds(t *testing.T) {
	for _, scale := range []int{-1, 101} {
		c := Config{HealthCheckTimeScale: scale}
		c.setDefaults()
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "time scale") {
			t.Errorf("scale %d: %v", scale, err)
		}
	}
}
