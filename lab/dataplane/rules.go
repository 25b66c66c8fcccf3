package dataplane

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// This file is kube-proxy's and the load balancer's decision making, as pure
// functions of the objects they read. Nothing here watches, listens or
// locks, so every rule can be checked with a table of objects.

// clusterView is what the rules read from the apiserver. The Dataplane
// implements it over informer caches; tests implement it over plain slices.
// Lookups return nil when nothing matches.
type clusterView interface {
	service(namespace, name string) *v1.Service
	serviceByNodePort(port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort)
	serviceByHealthCheckNodePort(port int32) *v1.Service
	serviceByClusterIP(ip string, port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort)
	endpointSlices(namespace, service string) []*discoveryv1.EndpointSlice
	node(name string) *v1.Node
	nodes() []*v1.Node
	// nodeByInstanceID finds the Node whose spec.providerID ends in
	// "/<id>", as the Node controller writes it ("aws:///zone/i-...").
	nodeByInstanceID(id string) *v1.Node
	pod(namespace, name string) *v1.Pod
	podByIP(ip string) *v1.Pod
}

// cloudView is one snapshot of the cloud, indexed for routing.
type cloudView struct {
	lbs       []*cloud.LoadBalancer // shared with the cloud: read-only
	lbByName  map[string]*cloud.LoadBalancer
	lbByFront map[string]*cloud.LoadBalancer // DNS name or IP
	instByID  map[string]*cloud.Instance
	instByDNS map[string]*cloud.Instance
	routes    []cloudRoute // longest prefix first
	vpc       netip.Prefix
	// aws holds the security groups the AWS model's load balancers are
	// checked against (aws.go); nil in views built without them.
	aws *awsSecurity
}

type cloudRoute struct {
	prefix netip.Prefix
	cloud.Route
}

// newCloudView indexes a Snapshot (tests build views from one).
func newCloudView(st cloud.State, vpcCIDR string) *cloudView {
	lbs := make([]*cloud.LoadBalancer, len(st.LoadBalancers))
	for i := range st.LoadBalancers {
		lbs[i] = &st.LoadBalancers[i]
	}
	return indexCloud(lbs, st.Instances, st.Routes, vpcCIDR)
}

// indexCloud builds the routing view from the cloud's cheap accessors: the
// load balancers are the cloud's shared read-only views, so a view after a
// change costs a copy of what changed, not of every target.
func indexCloud(lbs []*cloud.LoadBalancer, insts []cloud.Instance, routes []cloud.Route, vpcCIDR string) *cloudView {
	st := struct {
		Instances []cloud.Instance
		Routes    []cloud.Route
	}{insts, routes}
	cv := &cloudView{
		lbs:       lbs,
		lbByName:  make(map[string]*cloud.LoadBalancer, len(lbs)),
		lbByFront: make(map[string]*cloud.LoadBalancer, len(lbs)),
		instByID:  make(map[string]*cloud.Instance, len(st.Instances)),
		instByDNS: make(map[string]*cloud.Instance, len(st.Instances)),
	}
	cv.vpc, _ = netip.ParsePrefix(vpcCIDR)
	for _, lb := range cv.lbs {
		cv.lbByName[lb.Name] = lb
		if f := cmp.Or(lb.DNSName, lb.IP); f != "" {
			cv.lbByFront[f] = lb
		}
	}
	for i := range st.Instances {
		inst := &st.Instances[i]
		cv.instByID[inst.ID] = inst
		// A terminated instance keeps its DNS name for an hour; a live
		// one must win if both are listed.
		if old := cv.instByDNS[inst.PrivateDNSName]; old == nil || old.State == cloud.InstanceTerminated {
			cv.instByDNS[inst.PrivateDNSName] = inst
		}
	}
	for _, r := range st.Routes {
		if p, err := netip.ParsePrefix(r.DestinationCIDR); err == nil {
			cv.routes = append(cv.routes, cloudRoute{prefix: p, Route: r})
		}
	}
	slices.SortStableFunc(cv.routes, func(a, b cloudRoute) int { return cmp.Compare(b.prefix.Bits(), a.prefix.Bits()) })
	return cv
}

// loadBalancer finds a load balancer by name, DNS name or IP.
func (cv *cloudView) loadBalancer(ref string) *cloud.LoadBalancer {
	if lb := cv.lbByName[ref]; lb != nil {
		return lb
	}
	return cv.lbByFront[ref]
}

// routeFor is the VPC's longest-prefix match for ip.
func (cv *cloudView) routeFor(ip netip.Addr) *cloudRoute {
	for i := range cv.routes {
		if cv.routes[i].prefix.Contains(ip) {
			return &cv.routes[i]
		}
	}
	return nil
}

// env is everything one routing decision reads.
type env struct {
	cluster clusterView
	cloud   *cloudView
	// overlay: Pod IPs that are not VPC addresses still reach other nodes
	// (an encapsulating CNI). When false they need a VPC route, which is
	// what the Route controller maintains.
	overlay bool
	// pick chooses one of n candidates for the round-robin counter key.
	pick func(key string, n int) int
	// memo, when set, caches per-Service summaries for one health round,
	// in which every node target of a load balancer asks about the same
	// Service.
	memo *roundMemo
}

type roundMemo struct {
	local map[string]map[string]int  // Service -> node -> ready endpoints
	ready map[string]map[string]bool // Service -> ready endpoint IPs
	// nodes and nodeReady answer per instance and per node once a round:
	// at 1,000 load balancers x 1,000 nodes a round asks a million times.
	nodes     map[string]*v1.Node // instance ID -> its Node (nil: none)
	nodeReady map[string]bool     // node name -> Ready
}

func newRoundMemo() *roundMemo {
	return &roundMemo{
		local:     map[string]map[string]int{},
		ready:     map[string]map[string]bool{},
		nodes:     map[string]*v1.Node{},
		nodeReady: map[string]bool{},
	}
}

// instanceForNode is the cloud instance behind a Node: by the instance ID
// at the end of spec.providerID, else by node name == private DNS name
// (the name the kubelet registers on AWS).
func (e *env) instanceForNode(n *v1.Node) *cloud.Instance {
	if n == nil {
		return nil
	}
	if id := providerInstanceID(n.Spec.ProviderID); id != "" {
		if inst := e.cloud.instByID[id]; inst != nil {
			return inst
		}
	}
	return e.cloud.instByDNS[n.Name]
}

// nodeForInstance is the reverse of instanceForNode.
func (e *env) nodeForInstance(inst *cloud.Instance) *v1.Node {
	if inst == nil {
		return nil
	}
	if e.memo != nil {
		if n, ok := e.memo.nodes[inst.ID]; ok {
			return n
		}
	}
	n := e.cluster.nodeByInstanceID(inst.ID)
	if n == nil {
		n = e.cluster.node(inst.PrivateDNSName)
	}
	if e.memo != nil {
		e.memo.nodes[inst.ID] = n
	}
	return n
}

// nodeReady is kube.NodeReady, once per node and health round.
func (e *env) nodeReady(n *v1.Node) bool {
	if e.memo == nil {
		return kube.NodeReady(n)
	}
	r, ok := e.memo.nodeReady[n.Name]
	if !ok {
		r = kube.NodeReady(n)
		e.memo.nodeReady[n.Name] = r
	}
	return r
}

// nodeIP is the node's InternalIP, or its instance's private IP while the
// Node controller has not written addresses yet.
func (e *env) nodeIP(n *v1.Node) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP && a.Address != "" {
			return a.Address
		}
	}
	if inst := e.instanceForNode(n); inst != nil {
		return inst.PrivateIP
	}
	return ""
}

// nodeByIP finds the node that has ip.
func (e *env) nodeByIP(ip string) *v1.Node {
	for _, n := range e.cluster.nodes() {
		if e.nodeIP(n) == ip {
			return n
		}
	}
	return nil
}

// providerInstanceID returns the last path segment of a providerID when it
// looks like an instance ID ("aws:///ap-northeast-1a/i-0123..." -> "i-0123...").
func providerInstanceID(providerID string) string {
	if providerID == "" {
		return ""
	}
	last := providerID[strings.LastIndex(providerID, "/")+1:]
	if strings.HasPrefix(last, "i-") {
		return last
	}
	return ""
}

// serviceForLB maps a load balancer back to its Service: by tag, else (for
// instance mode) by a listener whose target port is a Service's NodePort.
func (e *env) serviceForLB(lb *cloud.LoadBalancer) *v1.Service {
	if ns, name, ok := strings.Cut(cloud.TaggedService(lb.Tags), "/"); ok {
		if s := e.cluster.service(ns, name); s != nil {
			return s
		}
	}
	if lb.TargetType == cloud.TargetTypeInstance {
		for _, l := range lb.Listeners {
			if s, _ := e.cluster.serviceByNodePort(l.TargetPort, v1.Protocol(l.Protocol)); s != nil {
				return s
			}
		}
	}
	return nil
}

// endpoint is one backend of a Service port, as kube-proxy sees it.
type endpoint struct {
	IP          string
	Port        int32
	Node        string
	PodNS       string
	PodName     string
	Ready       bool
	Serving     bool
	Terminating bool
}

func (ep endpoint) addr() string { return hostPort(ep.IP, ep.Port) }

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func svcKey(s *v1.Service) string { return s.Namespace + "/" + s.Name }

func protoOf(p v1.Protocol) v1.Protocol {
	return cmp.Or(v1.Protocol(strings.ToUpper(string(p))), v1.ProtocolTCP)
}

// serviceEndpoints collects the endpoints of one Service port from its
// EndpointSlices. The slice port is matched by name, as kube-proxy does
// (the Service's targetPort may be a name that resolves differently per
// Pod). Only the first address of an endpoint is used, as in kube-proxy;
// duplicates across slices (possible while slices are being rebalanced)
// count once, preferring the ready copy. Nil conditions mean ready, per the
// EndpointSlice API.
func serviceEndpoints(sp v1.ServicePort, epSlices []*discoveryv1.EndpointSlice) []endpoint {
	seen := map[string]int{}
	var out []endpoint
	for _, sl := range epSlices {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 && sl.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var port int32
		found := false
		for _, p := range sl.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := v1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == sp.Name && protoOf(proto) == protoOf(sp.Protocol) && p.Port != nil {
				port, found = *p.Port, true
				break
			}
		}
		if !found {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ep := endpoint{IP: e.Addresses[0], Port: port}
			c := e.Conditions
			ep.Ready = c.Ready == nil || *c.Ready
			ep.Serving = ep.Ready
			if c.Serving != nil {
				ep.Serving = *c.Serving
			}
			ep.Terminating = c.Terminating != nil && *c.Terminating
			if e.NodeName != nil {
				ep.Node = *e.NodeName
			}
			if r := e.TargetRef; r != nil && r.Kind == "Pod" {
				ep.PodNS, ep.PodName = cmp.Or(r.Namespace, sl.Namespace), r.Name
			}
			if i, dup := seen[ep.addr()]; dup {
				if !out[i].Ready && ep.Ready {
					out[i] = ep
				}
				continue
			}
			seen[ep.addr()] = len(out)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(compareIPs(a.IP, b.IP), cmp.Compare(a.Port, b.Port))
	})
	return out
}

func compareIPs(a, b string) int {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	if errX != nil || errY != nil {
		return strings.Compare(a, b)
	}
	return x.Compare(y)
}

// usableEndpoints is kube-proxy's choice among endpoints: the ready ones;
// if none is ready, those still serving while terminating, so that
// connections drain during a rollout instead of failing (KEP-1669). With
// local set, only endpoints on node count (traffic policy Local).
func usableEndpoints(eps []endpoint, local bool, node string) []endpoint {
	var ready, terminating []endpoint
	for _, ep := range eps {
		if local && ep.Node != node {
			continue
		}
		switch {
		case ep.Ready:
			ready = append(ready, ep)
		case ep.Serving && ep.Terminating:
			terminating = append(terminating, ep)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// localReadyCounts counts the ready endpoints of svc per node, over all its
// ports: per node, the number kube-proxy's healthCheckNodePort server
// reports as "localEndpoints".
func localReadyCounts(svc *v1.Service, sl []*discoveryv1.EndpointSlice) map[string]int {
	ips := map[string]map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		for _, ep := range serviceEndpoints(sp, sl) {
			if ep.Ready && ep.Node != "" {
				if ips[ep.Node] == nil {
					ips[ep.Node] = map[string]bool{}
				}
				ips[ep.Node][ep.IP] = true
			}
		}
	}
	out := make(map[string]int, len(ips))
	for n, set := range ips {
		out[n] = len(set)
	}
	return out
}

// readyIPs is the set of ready endpoint IPs of svc, over all its ports.
func readyIPs(svc *v1.Service, sl []*discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		for _, ep := range serviceEndpoints(sp, sl) {
			if ep.Ready {
				out[ep.IP] = true
			}
		}
	}
	return out
}

func externalPolicy(s *v1.Service) string {
	if s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		return PolicyLocal
	}
	return PolicyCluster
}

func internalPolicy(s *v1.Service) string {
	if p := s.Spec.InternalTrafficPolicy; p != nil && *p == v1.ServiceInternalTrafficPolicyLocal {
		return PolicyLocal
	}
	return PolicyCluster
}

// nodePortOf returns the port of svc exposed on NodePort port.
func nodePortOf(svc *v1.Service, port int32, proto v1.Protocol) *v1.ServicePort {
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.NodePort == port && protoOf(sp.Protocol) == protoOf(proto) {
			return sp
		}
	}
	return nil
}

// clusterIPPortOf returns the port of svc reached at ip:port.
func clusterIPPortOf(svc *v1.Service, ip string, port int32, proto v1.Protocol) *v1.ServicePort {
	if !slices.Contains(clusterIPs(svc), ip) {
		return nil
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.Port == port && protoOf(sp.Protocol) == protoOf(proto) {
			return sp
		}
	}
	return nil
}

func clusterIPs(svc *v1.Service) []string {
	var out []string
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip != "" && ip != v1.ClusterIPNone && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// pickTarget is the load balancer's choice for one connection on listener
// l: round-robin over the healthy targets; before the first health check
// has finished, over those still "initial" (so a new load balancer works
// at once); otherwise none. Targets registered on the listener's target
// port serve it; if none are (ip mode may register each Pod on its own
// port), all targets do.
func pickTarget(lb *cloud.LoadBalancer, l cloud.Listener, pick func(string, int) int) (t cloud.Target, picked, fail i18n.Msg, ok bool) {
	var pool []cloud.Target
	for _, t := range lb.Targets {
		if t.Port == l.TargetPort {
			pool = append(pool, t)
		}
	}
	if len(pool) == 0 {
		pool = lb.Targets
	}
	if len(pool) == 0 {
		fail = why(tracetext.NoTargets, "lb", lb.Name)
		return cloud.Target{}, fail, fail, false
	}
	state := cloud.TargetHealthy
	cands := filterTargets(pool, cloud.TargetHealthy)
	if len(cands) == 0 {
		state = cloud.TargetInitial
		cands = filterTargets(pool, cloud.TargetInitial)
	}
	if len(cands) == 0 {
		parts := make([]string, len(pool))
		for i, t := range pool {
			parts[i] = fmt.Sprintf("%s:%d %s", t.ID, t.Port, t.Health)
			if t.Reason != "" {
				parts[i] += " (" + t.Reason + ")"
			}
		}
		targets := strings.Join(parts, ", ")
		fail = why(tracetext.NoHealthyTargets, "lb", lb.Name, "targets", targets)
		return cloud.Target{}, fail, fail, false
	}
	t = cands[pick(fmt.Sprintf("lb/%s/%s/%d", lb.Name, l.Protocol, l.Port), len(cands))]
	picked = why(tracetext.HopPicked, "port", itoa(l.Port), "proto", cmp.Or(l.Protocol, "TCP"), "target", t.ID, "tport", itoa(t.Port),
		"health", string(t.Health), "n", strconv.Itoa(len(cands)), "state", string(state))
	return t, picked, i18n.Msg{}, true
}

func filterTargets(ts []cloud.Target, h cloud.TargetHealth) []cloud.Target {
	var out []cloud.Target
	for _, t := range ts {
		if t.Health == h {
			out = append(out, t)
		}
	}
	return out
}

// reached is where a routed packet ended: the Pod and the port it was sent
// to. A zero reached means the packet went nowhere and the trace says why.
type reached struct {
	pod  *v1.Pod
	port int32
}

// routeLoadBalancer follows a connection that arrived at listener l of lb.
func (e *env) routeLoadBalancer(tr *Trace, lb *cloud.LoadBalancer, l cloud.Listener) reached {
	tr.LB = lb.Name
	tr.TargetType = string(lb.TargetType)
	svc := e.serviceForLB(lb)
	if svc != nil {
		tr.Service = svcKey(svc)
	}
	front := hostPort(cmp.Or(lb.DNSName, lb.IP, lb.Name), l.Port)
	if isAWS(lb) {
		if fail, ok := e.lbAdmits(lb, l.Port, tr.ClientIP); !ok {
			tr.hop(Hop{Kind: HopLB, Address: front}.say(fail, i18n.Msg{}))
			tr.fail(statusDropped, fail)
			return reached{}
		}
	}
	t, picked, fail, ok := pickTarget(lb, l, e.pick)
	if !ok {
		tr.hop(Hop{Kind: HopLB, Address: front}.say(fail, i18n.Msg{}))
		tr.fail(statusRejected, fail)
		return reached{}
	}
	if lb.TargetType == cloud.TargetTypeIP {
		return e.routeIPTarget(tr, front, picked, t)
	}

	inst := e.cloud.instByID[t.ID]
	node := e.nodeForInstance(inst)
	if isAWS(lb) {
		return e.routeAWSTarget(tr, lb, front, picked, t, inst, node)
	}
	tr.hop(Hop{Kind: HopLB, Node: nodeName(node), Address: front}.say(picked, i18n.Msg{}))
	switch {
	case inst == nil:
		tr.fail(statusRefused, why(tracetext.UnknownTarget, "target", t.ID))
		return reached{}
	case inst.State != cloud.InstanceRunning:
		tr.fail(statusDropped, why(tracetext.TargetNotRunning, "target", t.ID, "state", string(inst.State)))
		return reached{}
	case node == nil:
		tr.fail(statusRefused, why(tracetext.InstanceNoNode, "instance", t.ID))
		return reached{}
	}
	return e.routeNodePort(tr, node, t.Port, tr.ClientIP)
}

// routeIPTarget is ip mode: the load balancer sends straight to a Pod IP,
// with no NodePort and no kube-proxy in between. That only works when the
// VPC can reach Pod IPs.
func (e *env) routeIPTarget(tr *Trace, front string, picked i18n.Msg, t cloud.Target) reached {
	pod := e.cluster.podByIP(t.ID)
	podNode := ""
	if pod != nil {
		podNode = pod.Spec.NodeName
	}
	via, fail, ok := e.reach(nil, t.ID, e.cluster.node(podNode))
	if !ok {
		via = fail
	}
	tr.hop(Hop{Kind: HopLB, Node: podNode, Address: front}.say(picked, via))
	// No Policy: externalTrafficPolicy is kube-proxy's, and ip mode
	// bypasses kube-proxy.
	if !ok {
		tr.fail(statusDropped, fail)
		return reached{}
	}
	tr.EntryNode = podNode
	return e.deliver(tr, nil, endpoint{IP: t.ID, Port: t.Port, Node: podNode}, tr.ClientIP)
}

// routeNodePort is kube-proxy on node handling a packet for NodePort port.
func (e *env) routeNodePort(tr *Trace, node *v1.Node, port int32, clientIP string) reached {
	tr.EntryNode = node.Name
	nip := cmp.Or(e.nodeIP(node), node.Name)
	tr.hop(Hop{Kind: HopNode, Node: node.Name, Address: hostPort(nip, port)}.say(
		why(tracetext.HopArrives, "node", node.Name, "port", itoa(port)), i18n.Msg{}))
	svc, sp := e.cluster.serviceByNodePort(port, v1.ProtocolTCP)
	if svc == nil {
		tr.fail(statusRefused, why(tracetext.NoNodePort, "port", strconv.Itoa(int(port))))
		return reached{}
	}
	tr.Service = svcKey(svc)
	policy := externalPolicy(svc)
	tr.Policy = policy
	local := policy == PolicyLocal
	cands := usableEndpoints(e.endpoints(svc, sp), local, node.Name)
	args := []string{"port", itoa(port), "service", tr.Service, "sport", itoa(sp.Port), "policy", policy, "n", strconv.Itoa(len(cands))}
	rule := why(tracetext.HopNodePortCluster, args...)
	if local {
		rule = why(tracetext.HopNodePortLocal, args...)
	}
	tr.hop(Hop{Kind: HopNodePort, Node: node.Name, Address: hostPort(nip, port)}.say(rule, i18n.Msg{}))
	if len(cands) == 0 {
		if local {
			tr.fail(statusDropped, why(tracetext.ExternalLocalDrop, "node", node.Name, "service", tr.Service))
		} else {
			tr.fail(statusRejected, why(tracetext.NoEndpoints, "service", tr.Service))
		}
		return reached{}
	}
	ep := cands[e.pick(rrKey(svc, sp, local, node.Name), len(cands))]
	src := clientIP
	nat := why(tracetext.HopDNATKept, "from", hostPort(nip, port), "to", ep.addr(), "client", clientIP)
	if !local {
		// kube-proxy masquerades every external packet of a Cluster-policy
		// NodePort, also when the Pod is local: the reply must come back
		// through this node to be un-DNATed.
		src = nip
		nat = why(tracetext.HopDNATSNAT, "from", hostPort(nip, port), "to", ep.addr(), "client", clientIP, "nip", nip)
	}
	tr.hop(Hop{Kind: HopDNAT, Node: node.Name, Address: ep.addr()}.say(nat, i18n.Msg{}))
	return e.deliver(tr, node, ep, src)
}

// routeClusterIP is kube-proxy on the client's node (from, nil when not
// given) handling a packet for a ClusterIP. In-cluster traffic keeps its
// source; internalTrafficPolicy Local keeps it on from.
func (e *env) routeClusterIP(tr *Trace, from *v1.Node, svc *v1.Service, sp *v1.ServicePort, ip string) reached {
	tr.Service = svcKey(svc)
	policy := internalPolicy(svc)
	tr.Policy = policy
	local := policy == PolicyLocal && from != nil
	fromName := nodeName(from)
	if from != nil {
		tr.EntryNode = from.Name
		tr.hop(Hop{Kind: HopNode, Node: from.Name, Address: e.nodeIP(from)}.say(
			why(tracetext.HopLeaves, "node", from.Name, "addr", hostPort(ip, sp.Port)), i18n.Msg{}))
	}
	cands := usableEndpoints(e.endpoints(svc, sp), local, fromName)
	if len(cands) == 0 {
		tr.hop(Hop{Kind: HopDNAT, Node: fromName, Address: hostPort(ip, sp.Port)}.say(
			why(tracetext.HopClusterIPNone, "addr", hostPort(ip, sp.Port), "service", tr.Service, "policy", policy), i18n.Msg{}))
		if local {
			tr.fail(statusDropped, why(tracetext.InternalLocalDrop, "node", fromName, "service", tr.Service))
		} else {
			tr.fail(statusRejected, why(tracetext.NoEndpoints, "service", tr.Service))
		}
		return reached{}
	}
	ep := cands[e.pick(rrKey(svc, sp, local, fromName), len(cands))]
	tr.hop(Hop{Kind: HopDNAT, Node: fromName, Address: ep.addr()}.say(
		why(tracetext.HopClusterIPDNAT, "addr", hostPort(ip, sp.Port), "service", tr.Service, "policy", policy, "to", ep.addr(), "client", tr.ClientIP), i18n.Msg{}))
	return e.deliver(tr, from, ep, tr.ClientIP)
}

func rrKey(svc *v1.Service, sp *v1.ServicePort, local bool, node string) string {
	k := fmt.Sprintf("svc/%s/%s/%d", svcKey(svc), protoOf(sp.Protocol), sp.Port)
	if local {
		k += "@" + node
	}
	return k
}

func (e *env) endpoints(svc *v1.Service, sp *v1.ServicePort) []endpoint {
	return serviceEndpoints(*sp, e.cluster.endpointSlices(svc.Namespace, svc.Name))
}

// deliver carries the packet from node from (nil: from outside the nodes,
// as in ip mode) to the endpoint's Pod, with src as the source IP.
func (e *env) deliver(tr *Trace, from *v1.Node, ep endpoint, src string) reached {
	pod := e.podFor(ep)
	podNode := ep.Node
	if podNode == "" && pod != nil {
		podNode = pod.Spec.NodeName
	}
	if from != nil && podNode != "" && podNode != from.Name {
		to := e.cluster.node(podNode)
		via, fail, ok := e.reach(from, ep.IP, to)
		if !ok {
			via = fail
		}
		tr.ExtraHop = true
		tr.hop(Hop{Kind: HopForward, Node: podNode, Address: e.nodeIP(to)}.say(
			why(tracetext.HopForward, "from", from.Name, "to", podNode), via))
		if !ok {
			tr.fail(statusDropped, fail)
			return reached{}
		}
	}
	if pod == nil {
		tr.fail(statusRefused, why(tracetext.NoPod, "ip", ep.IP))
		return reached{}
	}
	tr.Pod = pod.Namespace + "/" + pod.Name
	tr.PodNode = podNode
	tr.PodIP = ep.IP
	tr.SourceIPSeenByPod = src
	var via i18n.Msg
	if tr.ProxyProtocolClientIP != "" {
		via = why(tracetext.ViaProxyProtocol, "client", tr.ProxyProtocolClientIP)
	}
	tr.hop(Hop{Kind: HopPod, Node: podNode, Address: ep.addr()}.say(
		why(tracetext.HopPod, "pod", tr.Pod, "src", src), via))
	return reached{pod: pod, port: ep.Port}
}

// podFor is the Pod that receives packets for ep: the Pod the endpoint
// names while it still has that IP, else whoever has the IP now (an
// endpoint can be stale, and a deleted Pod's IP can be reused).
func (e *env) podFor(ep endpoint) *v1.Pod {
	if ep.PodName != "" {
		if p := e.cluster.pod(ep.PodNS, ep.PodName); p != nil && (p.Status.PodIP == "" || p.Status.PodIP == ep.IP) {
			return p
		}
	}
	return e.cluster.podByIP(ep.IP)
}

// reach says how a packet for Pod IP ip (on node to) gets there from node
// from, or from the load balancer when from is nil, and whether it can.
func (e *env) reach(from *v1.Node, ip string, to *v1.Node) (via, fail i18n.Msg, ok bool) {
	no := func(key string, nameValues ...string) (i18n.Msg, i18n.Msg, bool) {
		return i18n.Msg{}, why(key, nameValues...), false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return no(tracetext.NotAnIP, "ip", ip)
	}
	if e.cloud.vpc.IsValid() && e.cloud.vpc.Contains(addr) {
		return why(tracetext.ViaVPC, "ip", ip), i18n.Msg{}, true
	}
	if r := e.cloud.routeFor(addr); r != nil {
		if r.State == cloud.RouteBlackhole {
			return no(tracetext.RouteBlackhole, "cidr", r.DestinationCIDR, "instance", r.InstanceID)
		}
		if inst := e.instanceForNode(to); inst != nil && inst.ID != r.InstanceID {
			return no(tracetext.RouteElsewhere, "cidr", r.DestinationCIDR, "instance", r.InstanceID, "want", inst.ID)
		}
		return why(tracetext.ViaRoute, "cidr", r.DestinationCIDR, "instance", r.InstanceID), i18n.Msg{}, true
	}
	if from == nil {
		return no(tracetext.LBCannotReachPodIP, "ip", ip)
	}
	if e.overlay {
		return why(tracetext.ViaOverlay, "node", nodeName(to)), i18n.Msg{}, true
	}
	return no(tracetext.NoRoute, "ip", ip, "node", nodeName(to))
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func nodeName(n *v1.Node) string {
	if n == nil {
		return ""
	}
	return n.Name
}
