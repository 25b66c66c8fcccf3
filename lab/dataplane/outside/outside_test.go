package outside

import (
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

func testView() View {
	return NewView([]cloud.LoadBalancer{
		{Name: "pub", DNSName: "Pub-1.us-east-1.elb.amazonaws.com", Scheme: cloud.SchemeInternetFacing, Listeners: []cloud.Listener{{Port: 80}}},
		{Name: "priv", DNSName: "internal-priv-2.us-east-1.elb.amazonaws.com", Scheme: cloud.SchemeInternal,
			Addresses: []cloud.LBAddress{{IP: "10.0.1.50"}}, Listeners: []cloud.Listener{{Port: 80}}},
		{Name: "ip", IP: "203.0.113.40", Scheme: cloud.SchemeInternetFacing, Listeners: []cloud.Listener{{Port: 80}}},
	}, []dataplane.ListenerInfo{
		{LB: "pub", Port: 80, Address: "127.0.0.1:41000"},
		{LB: "priv", Port: 80, Address: "127.0.0.1:41001"},
		{LB: "ip", Port: 80, Address: "127.0.0.1:41002"},
	})
}

func TestResolve(t *testing.T) {
	v := testView()
	for _, tc := range []struct {
		name string
		want string
		ok   bool
	}{
		{"pub-1.us-east-1.elb.amazonaws.com", "127.0.0.1", true},
		{"PUB-1.us-east-1.elb.amazonaws.com.", "127.0.0.1", true},
		{"internal-priv-2.us-east-1.elb.amazonaws.com", "10.0.1.50", true},
		{"localhost", "127.0.0.1", true},
		{"web", "", false},
		{"web.default.svc.cluster.local", "", false},
		{"example.com", "", false},
		{"x.elb.amazonaws.com", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := v.Resolve(tc.name)
			if ok != tc.ok || (ok && (len(got) == 0 || got[0] != tc.want)) {
				t.Errorf("Resolve(%q) = %v, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestRoute is the allowlist: only loopback is ever dialled.
func TestRoute(t *testing.T) {
	v := testView()
	const pub = "pub-1.us-east-1.elb.amazonaws.com"
	for _, tc := range []struct {
		name        string
		host, ip    string
		port        int32
		loopbackAny bool
		dial        string
		verdict     Verdict
	}{
		{"public name", pub, "127.0.0.1", 80, false, "127.0.0.1:41000", Connect},
		{"public name, no listener", pub, "127.0.0.1", 8080, true, "", TimedOut},
		{"internal name's private address", "internal-priv-2.us-east-1.elb.amazonaws.com", "10.0.1.50", 80, true, "", TimedOut},
		{"ip profile's public address", "203.0.113.40", "203.0.113.40", 80, false, "127.0.0.1:41002", Connect},
		{"a ClusterIP", "10.96.0.10", "10.96.0.10", 80, true, "", TimedOut},
		{"a Pod IP", "10.244.1.5", "10.244.1.5", 80, true, "", TimedOut},
		{"a lab LB's TEST-NET-2 address", "198.51.100.7", "198.51.100.7", 80, true, "", TimedOut},
		{"the internet", "example.com", "93.184.216.34", 80, true, "", Refused},
		{"a documentation address", "192.0.2.7", "192.0.2.7", 80, true, "", Refused},
		{"not an address", "x", "nope", 80, true, "", Refused},
		{"a public listener's own address", "127.0.0.1", "127.0.0.1", 41000, false, "127.0.0.1:41000", Connect},
		{"an internal listener from the console", "127.0.0.1", "127.0.0.1", 41001, false, "", Refused},
		{"an internal listener from the shell", "127.0.0.1", "127.0.0.1", 41001, true, "127.0.0.1:41001", Connect},
		{"the lab's API from the console", "localhost", "127.0.0.1", 8080, false, "", Refused},
		{"any loopback port from the shell", "localhost", "127.0.0.1", 8080, true, "127.0.0.1:8080", Connect},
		{"another loopback address from the console", "127.0.0.2", "127.0.0.2", 80, false, "", Refused},
		{"IPv6 loopback from the shell", "::1", "::1", 9000, true, "[::1]:9000", Connect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial, verdict := v.Route(tc.host, tc.ip, tc.port, tc.loopbackAny)
			if dial != tc.dial || verdict != tc.verdict {
				t.Errorf("Route(%q, %q, %d, %v) = %q, %v; want %q, %v", tc.host, tc.ip, tc.port, tc.loopbackAny, dial, verdict, tc.dial, tc.verdict)
			}
		})
	}
}
