package cloud

import (
	"testing"
)

// LoadBalancerViews shares what did not change and copies what did, and
// nothing a caller gets changes under it.
func TestLoadBalancerViews(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := ctxAs("user")
	inst := mustRun(t, c, RunInstanceInput{})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "a"})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "b"})
	first := c.LoadBalancerViews()
	if len(first) != 2 || first[0].Name != "a" || first[1].Name != "b" {
		t.Fatalf("views %v, want a and b in order", first)
	}
	for _, tc := range []struct {
		name       string
		change     func() error
		sameA      bool
		wantLen    int
		wantTarget int // targets of a after the change
	}{
		{"nothing changed", func() error { return nil }, true, 2, 0},
		{"a gets a target", func() error { return c.RegisterTargets(ctx, "a", []Target{{ID: inst.ID, Port: 30080}}) }, false, 2, 1},
		{"a's target health", func() error { return c.SetTargetHealth("a", inst.ID, 30080, TargetHealthy, "") }, false, 2, 1},
		{"b deleted", func() error { return c.DeleteLoadBalancer(ctx, "b") }, true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.LoadBalancerViews()
			if err := tc.change(); err != nil {
				t.Fatal(err)
			}
			after := c.LoadBalancerViews()
			if len(after) != tc.wantLen {
				t.Fatalf("%d views, want %d", len(after), tc.wantLen)
			}
			if (after[0] == before[0]) != tc.sameA {
				t.Errorf("a shared = %v, want %v", after[0] == before[0], tc.sameA)
			}
			if len(after[0].Targets) != tc.wantTarget {
				t.Errorf("a has %d targets, want %d", len(after[0].Targets), tc.wantTarget)
			}
			if !tc.sameA && len(before[0].Targets) == tc.wantTarget && tc.name == "a gets a target" {
				t.Error("the earlier view changed under its reader")
			}
		})
	}
	if got := first[0].Targets; len(got) != 0 {
		t.Errorf("the first view of a changed: %v", got)
	}
	if len(c.Instances()) != 1 || len(c.Routes()) != 0 {
		t.Errorf("Instances %d, Routes %d; want 1 and 0", len(c.Instances()), len(c.Routes()))
	}
}
