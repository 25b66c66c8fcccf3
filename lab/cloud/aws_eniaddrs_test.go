package cloud

import (
	"net/netip"
	"slices"
	"testing"
)

// The vpc-cni profile's Pod addresses sit on their node's interface as
// secondary addresses, as ipamd puts them there, and show where the AWS
// Load Balancer Controller looks for a Pod's ENI.
func TestPodAddresses(t *testing.T) {
	c := newTestCloud(t, nil)
	a := mustRun(t, c, RunInstanceInput{})
	b := mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("aws-cli")
	ip1, ip2 := netip.MustParseAddr("10.0.128.2"), netip.MustParseAddr("10.0.128.3")
	view := func(id string) []string {
		t.Helper()
		vs, err := c.DescribeInstancesAWS(ctx, []string{id}, nil)
		if err != nil || len(vs) != 1 {
			t.Fatalf("DescribeInstances %s: %v %v", id, vs, err)
		}
		return secondaryIPs(vs[0].PodAddresses)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		a, b []string
	}{
		{"assign two", func() error {
			if err := c.AssignPodAddress(a.ID, ip2); err != nil {
				return err
			}
			return c.AssignPodAddress(a.ID, ip1)
		}, []string{"10.0.128.2", "10.0.128.3"}, nil},
		{"assign again is a no-op", func() error { return c.AssignPodAddress(a.ID, ip1) }, []string{"10.0.128.2", "10.0.128.3"}, nil},
		{"an address moves to its new holder", func() error { return c.AssignPodAddress(b.ID, ip1) }, []string{"10.0.128.3"}, []string{"10.0.128.2"}},
		{"a late release from the old holder changes nothing", func() error { c.UnassignPodAddress(a.ID, ip1); return nil }, []string{"10.0.128.3"}, []string{"10.0.128.2"}},
		{"release", func() error { c.UnassignPodAddress(b.ID, ip1); return nil }, []string{"10.0.128.3"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			if got := view(a.ID); !slices.Equal(got, tc.a) {
				t.Errorf("%s: %v, want %v", a.ID, got, tc.a)
			}
			if got := view(b.ID); !slices.Equal(got, tc.b) {
				t.Errorf("%s: %v, want %v", b.ID, got, tc.b)
			}
		})
	}

	t.Run("the filter finds the instance by a secondary address", func(t *testing.T) {
		vs, err := c.DescribeInstancesAWS(ctx, nil, []Filter{{Name: "network-interface.addresses.private-ip-address", Values: []string{"10.0.128.3"}}})
		if err != nil || len(vs) != 1 || vs[0].ID != a.ID {
			t.Fatalf("got %v %v, want %s", vs, err, a.ID)
		}
		if dns := vs[0].PodAddresses[0].PrivateDNSName; dns != "ip-10-0-128-3."+c.Config().Region+".compute.internal" {
			t.Errorf("private DNS name %q", dns)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			id   string
			addr string
		}{
			{"i-0000000000000000f", "10.0.128.9"},
			{a.ID, "192.0.2.1"},
			{a.ID, b.PrivateIP},
		} {
			if err := c.AssignPodAddress(tc.id, netip.MustParseAddr(tc.addr)); err == nil {
				t.Errorf("AssignPodAddress(%s, %s) = nil, want an error", tc.id, tc.addr)
			}
		}
		if got := view(a.ID); !slices.Equal(got, []string{"10.0.128.3"}) {
			t.Errorf("after refusals: %v", got)
		}
	})

	t.Run("a terminated instance's interface is gone", func(t *testing.T) {
		if _, err := c.TerminateInstance(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if got := view(a.ID); len(got) != 0 {
			t.Errorf("terminated %s still shows %v", a.ID, got)
		}
		if err := c.AssignPodAddress(a.ID, ip2); err == nil {
			t.Error("assign to a terminated instance succeeded")
		}
	})
}
