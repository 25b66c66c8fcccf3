package cloud

import (
	"testing"
)

func TestRoutes(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := ctxAs("route-controller")
	n1 := mustRun(t, c, RunInstanceInput{})
	n2 := mustRun(t, c, RunInstanceInput{})
	for _, r := range []struct{ cidr, id string }{
		{"10.244.10.0/24", n1.ID},
		{"10.244.2.0/24", n2.ID},
		{"fd00:10:244:1::/64", n1.ID},
	} {
		if err := c.CreateRoute(ctx, r.cidr, r.id); err != nil {
			t.Fatalf("CreateRoute(%s): %v", r.cidr, err)
		}
	}
	routes, err := c.DescribeRouteTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range routes {
		got = append(got, r.DestinationCIDR+"="+r.State)
	}
	want := []string{"10.244.2.0/24=active", "10.244.10.0/24=active", "fd00:10:244:1::/64=active"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("routes = %v, want %v (numeric order)", got, want)
	}

	if _, err := c.TerminateInstance(ctxAs("user"), n1.ID); err != nil {
		t.Fatal(err)
	}
	routes, _ = c.DescribeRouteTable(ctx)
	if routes[1].State != RouteBlackhole || routes[0].State != RouteActive {
		t.Fatalf("after terminating %s: %+v", n1.ID, routes)
	}
	if call := lastCall(t, c); call.Result != "3 routes (2 blackhole)" {
		t.Fatalf("result summary = %q", call.Result)
	}

	if err := c.DeleteRoute(ctx, "10.244.10.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRoute(ctx, "10.244.10.0/24"); !IsCode(err, ErrRouteNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
