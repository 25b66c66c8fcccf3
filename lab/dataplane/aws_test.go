package dataplane

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// The AWS fixture: the security groups the upstream AWS provider makes
// (checked by running it, docs/architecture.md): a k8s-elb-… group for a
// Classic ELB that admits the listener port from anywhere, and rules on
// the nodes' group: all traffic from the ELB's group (Classic ELB), or
// the NodePort from the client ranges and the health check port from the
// NLB's subnets (NLB).
const (
	elbSG    = "sg-0e1b00000000000001"
	nodeSG   = "sg-0n0de0000000000001"
	zoneA    = "ap-northeast-1a"
	zoneB    = "ap-northeast-1c"
	elbAddrA = "10.0.15.250"
	elbAddrB = "10.0.31.250"
)

func anywhere(port int32) cloud.IPPermission {
	return cloud.IPPermission{Protocol: "tcp", FromPort: port, ToPort: port, CIDRs: []string{"0.0.0.0/0"}}
}

func fromGroup(g string) cloud.IPPermission {
	return cloud.IPPermission{Protocol: "-1", FromPort: -1, ToPort: -1, GroupIDs: []string{g}}
}

// awsLB is a Classic ELB (kind classic) or an NLB (kind network) in front
// of the fixture's Service on NodePort 30080, with instances A, B and C
// as healthy targets.
func awsLB(kind string, policy v1.ServiceExternalTrafficPolicy) cloud.LoadBalancer {
	lb := instanceLB(cloud.TargetHealthy, cloud.TargetHealthy, cloud.TargetHealthy)
	lb.Kind = kind
	lb.Name = "a0123456789abcdef0123456789abcde"
	lb.DNSName = lb.Name + "-1234567890.ap-northeast-1.elb.amazonaws.com"
	lb.Addresses = []cloud.LBAddress{{Zone: zoneA, Subnet: "subnet-a", IP: elbAddrA}, {Zone: zoneB, Subnet: "subnet-b", IP: elbAddrB}}
	lb.HealthCheck = &cloud.HealthCheck{Protocol: "TCP", Port: 30080}
	if policy == local {
		lb.HealthCheck = &cloud.HealthCheck{Protocol: "HTTP", Port: 32000, Path: "/healthz"}
	}
	if kind == cloud.LBKindClassic {
		lb.SecurityGroups = []string{elbSG}
	} else {
		lb.PreserveClientIP = true
	}
	return lb
}

// ipNLB is an NLB with the Pod web-b as its one ip target.
func ipNLB(preserve bool) cloud.LoadBalancer {
	lb := awsLB(cloud.LBKindNetwork, cluster)
	lb.TargetType = cloud.TargetTypeIP
	lb.Listeners = []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 8080}}
	lb.Targets = []cloud.Target{{ID: podBIP, Port: 8080, Health: cloud.TargetHealthy}}
	lb.PreserveClientIP = preserve
	return lb
}

// awsGroups are the groups the provider leaves for kind.
func awsGroups(kind string) []cloud.SecurityGroup {
	node := cloud.SecurityGroup{ID: nodeSG, Ingress: []cloud.IPPermission{fromGroup(nodeSG)}}
	if kind == cloud.LBKindClassic {
		node.Ingress = append(node.Ingress, fromGroup(elbSG))
		return []cloud.SecurityGroup{{ID: elbSG, Ingress: []cloud.IPPermission{anywhere(80)}}, node}
	}
	node.Ingress = append(node.Ingress, anywhere(30080),
		cloud.IPPermission{Protocol: "tcp", FromPort: 32000, ToPort: 32000, CIDRs: []string{"10.0.0.0/20", "10.0.16.0/20"}})
	return []cloud.SecurityGroup{node}
}

// awsWorld is baseWorld behind lb, with both Pods ready, instances A and C
// in zone a and B in zone c, and groups enforced.
func awsWorld(t *testing.T, policy v1.ServiceExternalTrafficPolicy, lb cloud.LoadBalancer, groups []cloud.SecurityGroup) (*Dataplane, *[]Delivery) {
	t.Helper()
	w := baseWorld(policy)
	w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-a"), "ready"}, ep{w.podByName("web-b"), "ready"})}
	for i := range w.state.Instances {
		w.state.Instances[i].Zone = zoneA
		if w.state.Instances[i].ID == instB {
			w.state.Instances[i].Zone = zoneB
		}
	}
	w.state.LoadBalancers = []cloud.LoadBalancer{lb}
	d := w.dataplane(t)
	d.cloudView.Load().aws = newAWSSecurity(groups, []string{nodeSG})
	var got []Delivery
	d.cfg.OnDeliver = func(dv Delivery) { got = append(got, dv) }
	return d, &got
}

func TestAWSLoadBalancerRouting(t *testing.T) {
	noELBRule := awsGroups(cloud.LBKindClassic)
	noELBRule[1].Ingress = noELBRule[1].Ingress[:1] // the nodes' group admits only itself
	closedELB := awsGroups(cloud.LBKindClassic)
	closedELB[0].Ingress = nil
	noClientRule := awsGroups(cloud.LBKindNetwork)
	noClientRule[0].Ingress = []cloud.IPPermission{fromGroup(nodeSG)}
	proxied := func(lb cloud.LoadBalancer) cloud.LoadBalancer { lb.ProxyProtocolPorts = []int32{30080}; return lb }
	internal := func(lb cloud.LoadBalancer) cloud.LoadBalancer { lb.Scheme = cloud.SchemeInternal; return lb }
	noPreserve := func(lb cloud.LoadBalancer) cloud.LoadBalancer { lb.PreserveClientIP = false; return lb }

	tests := []struct {
		name    string
		policy  v1.ServiceExternalTrafficPolicy
		lb      cloud.LoadBalancer
		groups  []cloud.SecurityGroup
		status  int
		lbSrc   string // the source at the node
		podSees string // "elb", "client", "node" (kube-proxy's masquerade)
		logIP   string // the access log's client: "" = what the Pod sees
		errKey  string
		errHas  []string
	}{
		{name: "Classic ELB, Cluster: kube-proxy masquerades the ELB's address", policy: cluster, lb: awsLB(cloud.LBKindClassic, cluster), groups: awsGroups(cloud.LBKindClassic),
			status: 200, lbSrc: elbAddrA, podSees: "node"},
		{name: "Classic ELB, Local: the Pod sees the ELB's address", policy: local, lb: awsLB(cloud.LBKindClassic, local), groups: awsGroups(cloud.LBKindClassic),
			status: 200, lbSrc: elbAddrA, podSees: "elb"},
		{name: "Classic ELB with proxy protocol, Local: the access log has the client", policy: local, lb: proxied(awsLB(cloud.LBKindClassic, local)), groups: awsGroups(cloud.LBKindClassic),
			status: 200, lbSrc: elbAddrA, podSees: "elb", logIP: client},
		{name: "NLB, Local: the Pod sees the client", policy: local, lb: awsLB(cloud.LBKindNetwork, local), groups: awsGroups(cloud.LBKindNetwork),
			status: 200, lbSrc: client, podSees: "client"},
		{name: "NLB, Cluster: kube-proxy masquerades the client", policy: cluster, lb: awsLB(cloud.LBKindNetwork, cluster), groups: awsGroups(cloud.LBKindNetwork),
			status: 200, lbSrc: client, podSees: "node"},
		{name: "NLB without client IP preservation, Local: the Pod sees the NLB", policy: local, lb: noPreserve(awsLB(cloud.LBKindNetwork, local)), groups: awsGroups(cloud.LBKindNetwork),
			status: 200, lbSrc: elbAddrA, podSees: "elb"},
		{name: "NLB, ip targets, preserve_client_ip off (TCP's default): the Pod sees the NLB", policy: cluster, lb: ipNLB(false), groups: awsGroups(cloud.LBKindNetwork),
			status: 200, lbSrc: elbAddrA, podSees: "elb"},
		{name: "NLB, ip targets, preserve_client_ip on: the Pod sees the client", policy: cluster, lb: ipNLB(true), groups: awsGroups(cloud.LBKindNetwork),
			status: 200, lbSrc: client, podSees: "client"},
		{name: "nodes' group does not admit the ELB's group", policy: cluster, lb: awsLB(cloud.LBKindClassic, cluster), groups: noELBRule,
			status: statusDropped, errKey: tracetext.SGInstance, errHas: []string{nodeSG, "tcp/30080", elbAddrA, elbSG}},
		{name: "ELB's group does not admit the client", policy: cluster, lb: awsLB(cloud.LBKindClassic, cluster), groups: closedELB,
			status: statusDropped, errKey: tracetext.SGLoadBalancer, errHas: []string{elbSG, "tcp/80", client}},
		{name: "nodes' group does not admit the NLB's client", policy: local, lb: awsLB(cloud.LBKindNetwork, local), groups: noClientRule,
			status: statusDropped, errKey: tracetext.SGInstance, errHas: []string{nodeSG, "tcp/30080", client}},
		{name: "internal NLB: a client on the internet has no path to it", policy: local, lb: internal(awsLB(cloud.LBKindNetwork, local)), groups: awsGroups(cloud.LBKindNetwork),
			status: statusDropped, errKey: tracetext.InternalFromOutside, errHas: []string{client, "internal"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, delivered := awsWorld(t, tc.policy, tc.lb, tc.groups)
			tr, err := d.Do(t.Context(), Request{Kind: KindLoadBalancer, LB: tc.lb.DNSName})
			if err != nil {
				t.Fatal(err)
			}
			checkErrorKey(t, tr)
			if tr.Status != tc.status || tr.ErrorKey != tc.errKey {
				t.Fatalf("status %d key %q (%s), want %d %q; hops %s", tr.Status, tr.ErrorKey, tr.Error, tc.status, tc.errKey, hopKinds(tr))
			}
			for _, s := range tc.errHas {
				if !strings.Contains(tr.Error, s) {
					t.Errorf("error %q does not name %q", tr.Error, s)
				}
			}
			if tc.errKey != "" {
				if len(*delivered) != 0 {
					t.Errorf("a dropped request reached a Pod: %+v", *delivered)
				}
				return
			}
			if tr.LBSourceIP != tc.lbSrc {
				t.Errorf("source at the node %q, want %q", tr.LBSourceIP, tc.lbSrc)
			}
			want := map[string]string{"elb": tc.lbSrc, "client": client}[tc.podSees]
			if tc.podSees == "node" {
				want = map[string]string{nodeA: ipA, nodeB: ipB, nodeC: ipC}[tr.EntryNode]
			}
			if tr.SourceIPSeenByPod != want || want == "" {
				t.Errorf("the Pod sees %q, want %q (%s)", tr.SourceIPSeenByPod, want, tc.podSees)
			}
			if len(*delivered) != 1 {
				t.Fatalf("%d deliveries, want 1", len(*delivered))
			}
			dv := (*delivered)[0]
			if logIP := cmpOr(tc.logIP, want); dv.ClientIP != logIP {
				t.Errorf("access log client %q, want %q", dv.ClientIP, logIP)
			}
			if tc.logIP != "" && (tr.ProxyProtocolClientIP != client || dv.PeerIP != want) {
				t.Errorf("PROXY header client %q, peer %q; want %q, %q", tr.ProxyProtocolClientIP, dv.PeerIP, client, want)
			}
			if tc.logIP == "" && tr.ProxyProtocolClientIP != "" {
				t.Errorf("a PROXY header (%q) without the policy", tr.ProxyProtocolClientIP)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestAWSTargetHealth: an AWS load balancer's health checks follow the
// Service's policy as for the lab's own (healthCheckNodePort under Local,
// the traffic port under Cluster), and must get through the instance's
// security groups from the load balancer's own address.
func TestAWSTargetHealth(t *testing.T) {
	noHealthRule := awsGroups(cloud.LBKindNetwork)
	noHealthRule[0].Ingress = noHealthRule[0].Ingress[:2] // the client rule only
	tests := []struct {
		name   string
		policy v1.ServiceExternalTrafficPolicy
		lb     cloud.LoadBalancer
		groups []cloud.SecurityGroup
		want   map[string]cloud.TargetHealth // by instance
		reason string                        // of the unhealthy ones
	}{
		{"NLB, Local: only nodes with a ready local endpoint", local, awsLB(cloud.LBKindNetwork, local), awsGroups(cloud.LBKindNetwork),
			map[string]cloud.TargetHealth{instA: cloud.TargetHealthy, instB: cloud.TargetHealthy, instC: cloud.TargetUnhealthy}, reasonNoLocalEndpoints},
		{"NLB, Cluster: every ready node", cluster, awsLB(cloud.LBKindNetwork, cluster), awsGroups(cloud.LBKindNetwork),
			map[string]cloud.TargetHealth{instA: cloud.TargetHealthy, instB: cloud.TargetHealthy, instC: cloud.TargetHealthy}, ""},
		{"Classic ELB, Local: only nodes with a ready local endpoint", local, awsLB(cloud.LBKindClassic, local), awsGroups(cloud.LBKindClassic),
			map[string]cloud.TargetHealth{instA: cloud.TargetHealthy, instB: cloud.TargetHealthy, instC: cloud.TargetUnhealthy}, reasonNoLocalEndpoints},
		{"NLB, Local, no rule for the health check port: every check times out", local, awsLB(cloud.LBKindNetwork, local), noHealthRule,
			map[string]cloud.TargetHealth{instA: cloud.TargetUnhealthy, instB: cloud.TargetUnhealthy, instC: cloud.TargetUnhealthy}, "Target.Timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := awsWorld(t, tc.policy, tc.lb, tc.groups)
			e := d.env()
			lb := e.cloud.lbs[0]
			svc := e.serviceForLB(lb)
			got := map[string]cloud.TargetHealth{}
			for _, tg := range lb.Targets {
				r, ok := e.targetHealth(lb, svc, tg)
				if !ok || r.http != nil {
					t.Fatalf("%s: %+v, judged %v", tg.ID, r, ok)
				}
				got[tg.ID] = cloud.TargetHealthy
				if !r.ok {
					got[tg.ID] = cloud.TargetUnhealthy
					if !strings.Contains(r.code+" "+r.why, tc.reason) {
						t.Errorf("%s unhealthy for %s %q, want %q", tg.ID, r.code, r.why, tc.reason)
					}
				}
			}
			for id, h := range tc.want {
				if got[id] != h {
					t.Errorf("%s: %s, want %s", id, got[id], h)
				}
			}
		})
	}
}

// TestSecurityGroupAdmits: the indexed groups name the rule a scan of the
// group's rules in order would name, and admit nothing the rules do not.
func TestSecurityGroupAdmits(t *testing.T) {
	groups := []cloud.SecurityGroup{
		{ID: "sg-node", Ingress: []cloud.IPPermission{
			{Protocol: "tcp", FromPort: 22, ToPort: 22, CIDRs: []string{"0.0.0.0/0"}},
			{Protocol: "tcp", FromPort: 30000, ToPort: 32767, GroupIDs: []string{"sg-elb-b", "sg-elb-a"}},
			{Protocol: "-1", CIDRs: []string{"10.0.0.0/16", "10.0.1.0/24"}},
			{Protocol: "TCP", FromPort: 80, ToPort: 80, GroupIDs: []string{"sg-elb-a"}},
		}},
		{ID: "sg-other", Ingress: []cloud.IPPermission{{Protocol: "udp", FromPort: 0, ToPort: 65535, CIDRs: []string{"0.0.0.0/0"}}}},
	}
	s := newAWSSecurity(groups, []string{"sg-node"})
	tests := []struct {
		name      string
		groups    []string
		port      int32
		src       string
		srcGroups []string
		want      string
		ok        bool
	}{
		{"an address rule", []string{"sg-node"}, 22, "203.0.113.1", nil, "sg-node tcp/22 from 0.0.0.0/0", true},
		{"a group rule", []string{"sg-node"}, 31000, "203.0.113.1", []string{"sg-elb-a"}, "sg-node tcp/30000-32767 from sg-elb-a", true},
		{"the earlier rule wins over a later group rule", []string{"sg-node"}, 80, "10.0.1.5", []string{"sg-elb-a"}, "sg-node all traffic from 10.0.0.0/16", true},
		{"the first matching address of a rule", []string{"sg-node"}, 8080, "10.0.1.5", nil, "sg-node all traffic from 10.0.0.0/16", true},
		{"a group rule on another port", []string{"sg-node"}, 80, "203.0.113.1", []string{"sg-elb-a"}, "sg-node TCP/80 from sg-elb-a", true},
		{"a group no rule names", []string{"sg-node"}, 31000, "203.0.113.1", []string{"sg-elb-c"}, "", false},
		{"a port no rule covers", []string{"sg-node"}, 443, "203.0.113.1", []string{"sg-elb-b"}, "", false},
		{"udp rules do not admit TCP", []string{"sg-other"}, 53, "203.0.113.1", nil, "", false},
		{"a group the snapshot does not have", []string{"sg-gone", "sg-node"}, 22, "203.0.113.1", nil, "sg-node tcp/22 from 0.0.0.0/0", true},
		{"a bad source address", []string{"sg-node"}, 22, "not-an-ip", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rule, ok := s.admits(tc.groups, tc.port, tc.src, tc.srcGroups)
			if got := rule.String(); got != tc.want || ok != tc.ok {
				t.Errorf("admits = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestInternalLoadBalancerFromInside: an internal load balancer answers a
// client inside the VPC (a private address), the one kind of client it
// has a path from.
func TestInternalLoadBalancerFromInside(t *testing.T) {
	lb := awsLB(cloud.LBKindNetwork, cluster)
	lb.Scheme = cloud.SchemeInternal
	d, delivered := awsWorld(t, cluster, lb, awsGroups(cloud.LBKindNetwork))
	tr, err := d.Do(t.Context(), Request{Kind: KindLoadBalancer, LB: lb.DNSName, ClientIP: "10.0.0.99"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status != 200 || len(*delivered) != 1 {
		t.Fatalf("status %d (%s), %d deliveries; want 200 and 1", tr.Status, tr.Error, len(*delivered))
	}
}
