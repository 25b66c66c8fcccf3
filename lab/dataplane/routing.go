package dataplane

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

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
		tr.Service, tr.ServiceUID = svcKey(svc), string(svc.UID)
	}
	front := hostPort(cmp.Or(lb.DNSName, lb.IP, lb.Name), l.Port)
	if internalOnly(lb) && !e.insideVPC(tr.ClientIP) {
		fail := why(tracetext.InternalFromOutside, "lb", lb.Name, "from", tr.ClientIP)
		tr.hop(Hop{Kind: HopLB, Address: front}.say(fail, i18n.Msg{}))
		tr.fail(statusDropped, fail)
		return reached{}
	}
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
		return e.routeIPTarget(tr, lb, front, picked, t)
	}

	inst := e.cloud.instByID[t.ID]
	node := e.nodeForInstance(inst)
	if isAWS(lb) {
		return e.routeAWSTarget(tr, lb, front, picked, t, inst, node)
	}
	tr.hop(Hop{Kind: HopLB, Node: nodeName(node), Address: front}.say(picked, i18n.Msg{}))
	if !tr.instanceServes(t, inst, node) {
		return reached{}
	}
	return e.routeNodePort(tr, node, t.Port, tr.ClientIP)
}

// instanceServes checks that an instance target exists, runs and is a
// Node; when not, it ends the trace with why and reports false.
func (tr *Trace) instanceServes(t cloud.Target, inst *cloud.Instance, node *v1.Node) bool {
	switch {
	case inst == nil:
		tr.fail(statusRefused, why(tracetext.UnknownTarget, "target", t.ID))
	case inst.State != cloud.InstanceRunning:
		tr.fail(statusDropped, why(tracetext.TargetNotRunning, "target", t.ID, "state", string(inst.State)))
	case node == nil:
		tr.fail(statusRefused, why(tracetext.InstanceNoNode, "instance", t.ID))
	default:
		return true
	}
	return false
}

// routeIPTarget is ip mode: the load balancer sends straight to a Pod IP,
// with no NodePort and no kube-proxy in between. That only works when the
// VPC can reach Pod IPs.
func (e *env) routeIPTarget(tr *Trace, lb *cloud.LoadBalancer, front string, picked i18n.Msg, t cloud.Target) reached {
	pod := e.cluster.podByIP(t.ID)
	podNode := ""
	if pod != nil {
		podNode = pod.Spec.NodeName
	}
	via, fail, ok := e.reach(nil, t.ID, e.cluster.node(podNode))
	src := tr.ClientIP
	if isAWS(lb) && ok {
		// An NLB's ip targets see the client only with the target
		// group's preserve_client_ip.enabled (off by default for TCP);
		// else the NLB's own address.
		src, via = awsSource(lb, nil, tr.ClientIP)
		tr.LBSourceIP = src
		if slices.Contains(lb.ProxyProtocolPorts, t.Port) {
			tr.ProxyProtocolClientIP = tr.ClientIP
		}
	}
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
	return e.deliver(tr, nil, endpoint{IP: t.ID, Port: t.Port, Node: podNode}, src)
}

// routeNodePort is kube-proxy on node handling a packet for NodePort port.
func (e *env) routeNodePort(tr *Trace, node *v1.Node, port int32, clientIP string) reached {
	tr.EntryNode = node.Name
	nip := cmp.Or(e.nodeIP(node), node.Name)
	tr.hop(Hop{Kind: HopNode, Node: node.Name, Address: hostPort(nip, port)}.say(
		why(tracetext.HopArrives, "node", node.Name, "port", itoa(port)), i18n.Msg{}))
	svc, sp := e.cluster.serviceByNodePort(port, cmp.Or(tr.protocol, v1.ProtocolTCP))
	if svc == nil {
		tr.fail(statusRefused, why(tracetext.NoNodePort, "port", strconv.Itoa(int(port))))
		return reached{}
	}
	tr.Service, tr.ServiceUID = svcKey(svc), string(svc.UID)
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
	ep := cands[e.affinity.choose(svc, sp, clientIP, cands, func() int { return e.pick(rrKey(svc, sp, local, node.Name), len(cands)) })]
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
	tr.Service, tr.ServiceUID = svcKey(svc), string(svc.UID)
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
	ep := cands[e.affinity.choose(svc, sp, tr.ClientIP, cands, func() int { return e.pick(rrKey(svc, sp, local, fromName), len(cands)) })]
	tr.hop(Hop{Kind: HopDNAT, Node: fromName, Address: ep.addr()}.say(
		why(tracetext.HopClusterIPDNAT, "addr", hostPort(ip, sp.Port), "service", tr.Service, "policy", policy, "to", ep.addr(), "client", tr.ClientIP), i18n.Msg{}))
	return e.deliver(tr, from, ep, tr.ClientIP)
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

// insideVPC says whether a request's client stands where an internal load
// balancer's private addresses are routed: an address of the VPC (nodes,
// ENIs, vpc-cni's Pods), a Pod CIDR the VPC's route table sends to a node,
// or a Pod of the cluster (an overlay's Pod leaves through its node, a VPC
// address). Any other address, private or not, is outside: an internal
// scheme's addresses are reachable only from the VPC and networks joined
// to it, and the lab joins none. The request panel's default client,
// 203.0.113.10, is on the internet. A view without a VPC (the kubevirt
// profile's) falls back to any private address.
func (e *env) insideVPC(client string) bool {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return false
	}
	if !e.cloud.vpc.IsValid() {
		return a.IsPrivate()
	}
	return e.cloud.vpc.Contains(a) || e.cloud.routeFor(a) != nil || e.cluster.podByIP(client) != nil
}
