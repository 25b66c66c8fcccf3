package dataplane

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestLayer4Listeners: a load balancer that only carries connections
// never writes an HTTP answer of its own: with nothing to send to, an NLB
// or a Classic ELB's TCP listener resets the connection, and a dropped
// packet leaves it unanswered; a Classic ELB's HTTP listener answers 503,
// and the lab's own load balancers keep their answer.
func TestLayer4Listeners(t *testing.T) {
	noTargets := func(lb cloud.LoadBalancer) cloud.LoadBalancer { lb.Targets = nil; return lb }
	httpListener := func(lb cloud.LoadBalancer) cloud.LoadBalancer {
		lb.Listeners = []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080, Frontend: "HTTP"}}
		return lb
	}
	noClientRule := awsGroups(cloud.LBKindNetwork)
	noClientRule[0].Ingress = []cloud.IPPermission{fromGroup(nodeSG)}
	lab := instanceLB("", "", "")
	lab.Name, lab.DNSName = "own", "own.example"

	tests := []struct {
		name   string
		lb     cloud.LoadBalancer
		groups []cloud.SecurityGroup
		want   string // "reset", "held, then reset", or an HTTP status
	}{
		{"NLB with no target: reset", noTargets(awsLB(cloud.LBKindNetwork, cluster)), awsGroups(cloud.LBKindNetwork), "reset"},
		{"Classic ELB TCP listener with no instance: reset", noTargets(awsLB(cloud.LBKindClassic, cluster)), awsGroups(cloud.LBKindClassic), "reset"},
		{"Classic ELB HTTP listener with no instance: 503", httpListener(noTargets(awsLB(cloud.LBKindClassic, cluster))), awsGroups(cloud.LBKindClassic), "503"},
		{"NLB whose packets the nodes' group drops: no answer", awsLB(cloud.LBKindNetwork, cluster), noClientRule, "held, then reset"},
		{"the lab's own load balancer with no target: its 503", lab, nil, "503"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := awsWorld(t, cluster, tc.lb, tc.groups)
			const hold = 300 * time.Millisecond
			d.cfg.DroppedHold = hold
			d.held = make(chan struct{}, 1)
			srv := httptest.NewServer(d.handler(listenerKey{tc.lb.Name, 80}))
			t.Cleanup(srv.Close)
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: lb\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = conn.SetReadDeadline(start.Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			got := "?"
			switch {
			case err == nil:
				got = resp.Status[:3]
			case errors.Is(err, syscall.ECONNRESET) && time.Since(start) >= hold:
				// Not a byte before the hold ran out: the client saw a
				// connection that never answered.
				got = "held, then reset"
			case errors.Is(err, syscall.ECONNRESET):
				got = "reset"
			case errors.Is(err, os.ErrDeadlineExceeded):
				got = "no answer in 10s"
			}
			if got != tc.want {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// TestInternalLoadBalancerHasNoListener: an internal load balancer gets
// no loopback port; the student's shell cannot reach it.
func TestInternalLoadBalancerHasNoListener(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		open   bool
	}{{cloud.SchemeInternetFacing, true}, {cloud.SchemeInternal, false}} {
		t.Run(tc.scheme, func(t *testing.T) {
			lb := awsLB(cloud.LBKindNetwork, cluster)
			lb.Scheme = tc.scheme
			d, _ := awsWorld(t, cluster, lb, awsGroups(cloud.LBKindNetwork))
			c, err := cloud.New(cloud.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			d.cfg.Cloud, d.cfg.ListenHost = c, "127.0.0.1"
			t.Cleanup(d.closeListeners)
			d.syncListeners(d.cloudView.Load())
			if open := len(d.Listeners()) == 1; open != tc.open {
				t.Errorf("listeners %+v, want open %v", d.Listeners(), tc.open)
			}
		})
	}
}

// TestInsideVPC: an internal load balancer admits clients of the lab's
// VPC (its nodes, a Pod CIDR its route table sends to a node, a Pod of the
// cluster) and no one else, a private address of another network included.
func TestInsideVPC(t *testing.T) {
	d, _ := awsWorld(t, cluster, awsLB(cloud.LBKindNetwork, cluster), awsGroups(cloud.LBKindNetwork))
	e := d.env()
	for _, tc := range []struct {
		client string
		inside bool
	}{
		{ipA, true},            // a node, in the VPC's CIDR
		{podAIP, true},         // a Pod, by the route to its node
		{"10.244.2.200", true}, // a Pod CIDR the route table sends to node C
		{"10.244.9.9", false},  // no route, no Pod: nowhere in the VPC
		{"192.168.1.5", false}, // private, but another network's
		{client, false},        // the internet
		{"not-an-address", false},
	} {
		if got := e.insideVPC(tc.client); got != tc.inside {
			t.Errorf("insideVPC(%q) = %t, want %t", tc.client, got, tc.inside)
		}
	}
}
