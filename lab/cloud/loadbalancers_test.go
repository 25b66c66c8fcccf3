package cloud

import (
	"net/netip"
	"regexp"
	"testing"
)

func TestLoadBalancerIngress(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		check func(t *testing.T, lb LoadBalancer)
	}{
		{"hostname", IngressHostname, func(t *testing.T, lb LoadBalancer) {
			re := regexp.MustCompile(`^a1b2c3-[0-9]{10}\.elb\.ap-northeast-1\.ccmlab\.internal$`)
			if !re.MatchString(lb.DNSName) || lb.IP != "" {
				t.Errorf("DNSName %q IP %q", lb.DNSName, lb.IP)
			}
		}},
		{"ip", IngressIP, func(t *testing.T, lb LoadBalancer) {
			if lb.DNSName != "" || !netip.MustParsePrefix("198.51.100.0/24").Contains(netip.MustParseAddr(lb.IP)) {
				t.Errorf("DNSName %q IP %q", lb.DNSName, lb.IP)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCloud(t, func(cfg *Config) { cfg.IngressMode = tt.mode })
			lb := mustCreateLB(t, c, CreateLoadBalancerInput{Name: "a1b2c3", Tags: map[string]string{"kubernetes.io/service-name": "default/web"}})
			tt.check(t, lb)
			if lb.Scheme != SchemeInternetFacing || lb.TargetType != TargetTypeInstance || len(lb.Targets) != 0 || lb.Listeners[0] != (Listener{Protocol: "TCP", Port: 80, TargetPort: 30080}) {
				t.Errorf("unexpected LB %+v", lb)
			}
			if call := lastCall(t, c); call.Request != "name=a1b2c3 listeners=80->30080/TCP type=instance scheme=internet-facing tags=kubernetes.io/service-name=default/web" {
				t.Errorf("request summary = %q", call.Request)
			}
			got, err := c.DescribeLoadBalancers(ctxAs("service-controller"), "a1b2c3")
			if err != nil || len(got) != 1 || got[0].DNSName != lb.DNSName || got[0].IP != lb.IP {
				t.Fatalf("describe = %+v, %v", got, err)
			}
			if err := c.DeleteLoadBalancer(ctxAs("service-controller"), "a1b2c3"); err != nil {
				t.Fatal(err)
			}
			if all, _ := c.DescribeLoadBalancers(ctxAs("service-controller")); len(all) != 0 {
				t.Fatalf("after delete: %+v", all)
			}
		})
	}
}

func TestLBAddressPoolExhaustion(t *testing.T) {
	c := newTestCloud(t, func(cfg *Config) { cfg.IngressMode = IngressIP; cfg.LBCIDR = "198.51.100.0/30" })
	a := mustCreateLB(t, c, CreateLoadBalancerInput{Name: "a"})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "b"})
	_, err := c.CreateLoadBalancer(ctxAs("service-controller"), CreateLoadBalancerInput{Name: "c", Listeners: []Listener{{Port: 80, TargetPort: 1}}})
	wantCode(t, err, ErrNoAddresses, ActionCreateLoadBalancer)
	if err := c.DeleteLoadBalancer(ctxAs("service-controller"), "a"); err != nil {
		t.Fatal(err)
	}
	if lb := mustCreateLB(t, c, CreateLoadBalancerInput{Name: "c"}); lb.IP != a.IP {
		t.Fatalf("freed address not reused: %s vs %s", lb.IP, a.IP)
	}
}

func TestTargets(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := ctxAs("service-controller")
	n1 := mustRun(t, c, RunInstanceInput{})
	n2 := mustRun(t, c, RunInstanceInput{})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "web"})

	targets := func() []Target {
		t.Helper()
		lbs, err := c.DescribeLoadBalancers(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		return lbs[0].Targets
	}
	health := func(id string) TargetHealth {
		for _, tg := range targets() {
			if tg.ID == id {
				return tg.Health
			}
		}
		return "absent"
	}

	if err := c.RegisterTargets(ctx, "web", []Target{{ID: n1.ID, Port: 30080}, {ID: n2.ID, Port: 30080}, {ID: n1.ID, Port: 30080}}); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTargets(ctx, "web", []Target{{ID: n1.ID, Port: 30080}}); err != nil {
		t.Fatal(err)
	}
	if ts := targets(); len(ts) != 2 || ts[0].Health != TargetInitial || ts[0].Reason != "Elb.RegistrationInProgress" {
		t.Fatalf("targets = %+v", ts)
	}

	events, cancel := c.Subscribe(16)
	defer cancel()
	if err := c.SetTargetHealth("web", n1.ID, 30080, TargetHealthy, ""); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Kind != EventLoadBalancer || ev.ID != "web" || ev.Call != nil {
		t.Fatalf("event = %+v", ev)
	}
	if err := c.SetTargetHealth("web", n1.ID, 30080, TargetHealthy, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Fatalf("unchanged health published %+v", ev)
	default:
	}
	if err := c.SetTargetHealth("web", n1.ID, 1234, TargetHealthy, ""); !IsCode(err, ErrInvalidTarget) {
		t.Fatalf("unknown target port: %v", err)
	}
	if err := c.SetTargetHealth("nope", n1.ID, 30080, TargetHealthy, ""); !IsCode(err, ErrLBNotFound) {
		t.Fatalf("unknown LB: %v", err)
	}
	if err := c.SetTargetHealth("web", n1.ID, 30080, "great", ""); !IsCode(err, ErrValidation) {
		t.Fatalf("bad health: %v", err)
	}
	if call := lastCall(t, c); call.Action != ActionDescribeLoadBalancers {
		t.Fatalf("SetTargetHealth must not be logged, last call %+v", call)
	}

	// Instance state flows into target health, as on ELB.
	if _, err := c.StopInstance(ctx, n1.ID); err != nil {
		t.Fatal(err)
	}
	if h := health(n1.ID); h != TargetUnused {
		t.Fatalf("stopped instance target = %s", h)
	}
	if _, err := c.StartInstance(ctx, n1.ID); err != nil {
		t.Fatal(err)
	}
	if h := health(n1.ID); h != TargetInitial {
		t.Fatalf("restarted instance target = %s", h)
	}
	if _, err := c.TerminateInstance(ctx, n1.ID); err != nil {
		t.Fatal(err)
	}
	if h := health(n1.ID); h != "absent" {
		t.Fatalf("terminated instance still a target (%s)", h)
	}

	if err := c.DeregisterTargets(ctx, "web", []Target{{ID: n2.ID}}); err != nil {
		t.Fatal(err)
	}
	if ts := targets(); len(ts) != 0 {
		t.Fatalf("after deregister: %+v", ts)
	}
	if err := c.DeregisterTargets(ctx, "web", []Target{{ID: n2.ID, Port: 30080}}); err != nil {
		t.Fatalf("deregistering twice must be a no-op: %v", err)
	}
}

func TestIPTargetsAndHealthCheck(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := ctxAs("service-controller")
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "pods", TargetType: TargetTypeIP, Scheme: SchemeInternal})
	if err := c.RegisterTargets(ctx, "pods", []Target{{ID: "10.0.3.9", Port: 8080}, {ID: "10.0.3.10", Port: 8080}}); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigureHealthCheck(ctx, "pods", HealthCheck{Protocol: "http", Port: 10256}); err != nil {
		t.Fatal(err)
	}
	lbs, _ := c.DescribeLoadBalancers(ctx, "pods")
	want := HealthCheck{Protocol: "HTTP", Port: 10256, Path: "/", IntervalSeconds: 10, HealthyThreshold: 2, UnhealthyThreshold: 6}
	if lb := lbs[0]; lb.HealthCheck == nil || *lb.HealthCheck != want || len(lb.Targets) != 2 || lb.Scheme != SchemeInternal {
		t.Fatalf("lb = %+v hc %+v", lb, lb.HealthCheck)
	}
	ls, err := c.SetListeners(ctx, "pods", []Listener{{Protocol: "udp", Port: 53, TargetPort: 5353}})
	if err != nil || len(ls.Listeners) != 1 || ls.Listeners[0].Protocol != "UDP" {
		t.Fatalf("SetListeners = %+v, %v", ls, err)
	}
}
