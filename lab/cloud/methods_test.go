package cloud

import "testing"

func TestMethodTracker(t *testing.T) {
	var tr MethodTracker
	if got := tr.Method("service-controller"); got != "" {
		t.Fatalf("no method entered: got %q", got)
	}
	leave1 := tr.Enter("service-controller", "LoadBalancer.EnsureLoadBalancer")
	leave2 := tr.Enter("service-controller", "LoadBalancer.EnsureLoadBalancer")
	if got := tr.Method("service-controller"); got != "LoadBalancer.EnsureLoadBalancer" {
		t.Errorf("two calls of one method: got %q", got)
	}
	if got := tr.Method("route-controller"); got != "" {
		t.Errorf("another caller: got %q, want none", got)
	}
	leave3 := tr.Enter("service-controller", "LoadBalancer.EnsureLoadBalancerDeleted")
	if got := tr.Method("service-controller"); got != "" {
		t.Errorf("two different methods at once: got %q, want none (the lab cannot tell)", got)
	}
	leave3()
	leave1()
	leave1() // a second leave of the same entry changes nothing
	if got := tr.Method("service-controller"); got != "LoadBalancer.EnsureLoadBalancer" {
		t.Errorf("one call still running: got %q", got)
	}
	leave2()
	if got := tr.Method("service-controller"); got != "" {
		t.Errorf("all left: got %q", got)
	}
}
