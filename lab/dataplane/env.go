package dataplane

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

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
	// affinity keeps kube-proxy's ClientIP session affinity (nil: none).
	affinity *affinityTable
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
	nodeReady map[*v1.Node]bool   // keyed by the lister's object: cheaper to hash than a name
	// tcpNodePort: the Service with a TCP NodePort on a port (nil: none),
	// the same for every target checked on it in a round.
	tcpNodePort map[int32]*v1.Service
}

func newRoundMemo() *roundMemo {
	return &roundMemo{
		local:       map[string]map[string]int{},
		ready:       map[string]map[string]bool{},
		nodes:       map[string]*v1.Node{},
		nodeReady:   map[*v1.Node]bool{},
		tcpNodePort: map[int32]*v1.Service{},
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
	r, ok := e.memo.nodeReady[n]
	if !ok {
		r = kube.NodeReady(n)
		e.memo.nodeReady[n] = r
	}
	return r
}

// tcpNodePortService is the Service with a TCP NodePort on port, once per
// port and health round.
func (e *env) tcpNodePortService(port int32) *v1.Service {
	if e.memo == nil {
		s, _ := e.cluster.serviceByNodePort(port, v1.ProtocolTCP)
		return s
	}
	s, ok := e.memo.tcpNodePort[port]
	if !ok {
		s, _ = e.cluster.serviceByNodePort(port, v1.ProtocolTCP)
		e.memo.tcpNodePort[port] = s
	}
	return s
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

func nodeName(n *v1.Node) string {
	if n == nil {
		return ""
	}
	return n.Name
}
