package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
					st := h.state("aweb", tgtKey{id, 30080})
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

// TestHealthForgets: a round forgets the history of a target that was
// deregistered and of a load balancer that is gone, and keeps the rest.
func TestHealthForgets(t *testing.T) {
	w := baseWorld(v1.ServiceExternalTrafficPolicyCluster)
	w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
	clk := testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	d := newStaticDataplane(&w.objs, w.state, false, clk)
	round := func(lbs ...cloud.LoadBalancer) *healthChecker {
		st := w.state
		st.LoadBalancers = lbs
		cv := newCloudView(st, vpcCIDR)
		d.cloudView.Store(cv)
		clk.Step(time.Second)
		d.healthRound(cv, clk.Now())
		return d.health()
	}
	known := func(h *healthChecker, lb, id string) bool { return h.state(lb, tgtKey{id, 30080}) != nil }

	three := instanceLB(cloud.TargetInitial, cloud.TargetInitial, cloud.TargetInitial)
	h := round(three)
	for _, id := range []string{instA, instB, instC} {
		if !known(h, "aweb", id) {
			t.Fatalf("after the first round, %s has no history", id)
		}
	}
	h = round(instanceLB(cloud.TargetInitial, "", cloud.TargetInitial))
	if known(h, "aweb", instB) || !known(h, "aweb", instA) || !known(h, "aweb", instC) {
		t.Errorf("after %s was deregistered: A %v, B %v, C %v; want only B forgotten", instB,
			known(h, "aweb", instA), known(h, "aweb", instB), known(h, "aweb", instC))
	}
	h = round(instanceLB(cloud.TargetInitial, cloud.TargetUnused, cloud.TargetInitial))
	if known(h, "aweb", instB) {
		t.Error("an unused target has a history")
	}
	h = round()
	if len(h.lbs) != 0 {
		t.Errorf("after the load balancer went, the checker still holds %d", len(h.lbs))
	}
}

// BenchmarkHealthRound is one round of the health checker over 200 load
// balancers of 1,000 targets each when no target is due: the bookkeeping
// every round pays before any check (the 1,000 x 1,000 scale run showed
// it in its profile).
func BenchmarkHealthRound(b *testing.B) {
	const lbs, targets = 200, 1000
	st := cloud.State{}
	for i := range targets {
		st.Instances = append(st.Instances, cloud.Instance{ID: fmt.Sprintf("i-%017x", i), State: cloud.InstanceRunning})
	}
	for l := range lbs {
		lb := cloud.LoadBalancer{Name: fmt.Sprintf("a%031x", l), TargetType: cloud.TargetTypeInstance}
		for _, in := range st.Instances {
			lb.Targets = append(lb.Targets, cloud.Target{ID: in.ID, Port: 30080, Health: cloud.TargetInitial})
		}
		st.LoadBalancers = append(st.LoadBalancers, lb)
	}
	w := baseWorld(v1.ServiceExternalTrafficPolicyCluster)
	clk := testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	d := newStaticDataplane(&w.objs, st, false, clk)
	// Every target checked once, and the cloud told, as checkHealth does;
	// none is due again.
	changes := d.healthRound(d.cloudView.Load(), clk.Now())
	lbAt, tgAt := map[string]int{}, map[string]int{}
	for i, lb := range st.LoadBalancers {
		lbAt[lb.Name] = i
	}
	for i, in := range st.Instances {
		tgAt[in.ID] = i // every load balancer lists them in this order
	}
	for _, c := range changes {
		tg := &st.LoadBalancers[lbAt[c.LB]].Targets[tgAt[c.Target]]
		tg.Health, tg.Reason, tg.Code = c.Health, c.Reason, c.Code
	}
	cv := newCloudView(st, vpcCIDR)
	if n := len(d.healthRound(cv, clk.Now())); n != 0 {
		b.Fatalf("%d changes after the cloud was told", n)
	}
	b.ResetTimer()
	for b.Loop() {
		d.healthRound(cv, clk.Now())
	}
}
