package dataplane

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// The AWS model's load balancers (what the upstream AWS provider makes)
// differ from the lab's own in what reaches the node (docs/aws.md, "The
// data plane through Classic ELBs and NLBs"):
//
//   - A Classic ELB proxies TCP: it ends the client's connection and opens
//     its own from its address in the VPC, so the node (and, under
//     externalTrafficPolicy Local, the Pod) sees the ELB's address. Only a
//     PROXY protocol header (the proxy-protocol annotation) carries the
//     client's address on.
//   - An NLB keeps the client's address for instance targets (the target
//     group's preserve_client_ip.enabled, on by default for them).
//   - Security groups filter both legs: the load balancer's groups what
//     reaches it, the instance's groups what reaches the node. A packet
//     nothing admits is dropped silently, which a client sees as a
//     timeout; the trace names the rule that is missing.

// awsSecurity is the part of the cloud snapshot that security groups need,
// indexed once per snapshot: a health round asks it about every target of
// every load balancer, and at a thousand Classic ELBs the nodes' group has
// a rule for each ELB's group, so scanning every rule for every target
// (a billion rule checks a round) was a fifth of the lab's CPU.
type awsSecurity struct {
	groups     map[string]*sgIndex
	nodeGroups []string // every lab instance's groups
}

// sgIndex is one group's ingress rules: the address rules to scan (few),
// and the group rules by the source group they name.
type sgIndex struct {
	id    string
	cidrs []sgRule
	bySrc map[string][]sgRule
}

// sgRule is one source of one ingress permission. Where several rules
// admit a packet, the one earliest in the group's list (perm, then
// address before group, then sub) is named, as a scan in order would.
type sgRule struct {
	perm, sub int
	byGroup   bool
	prefix    netip.Prefix // address rules
	source    string       // the CIDR or group ID, for the rule's name
	p         *cloud.IPPermission
}

func (r sgRule) before(o sgRule) bool {
	if r.perm != o.perm {
		return r.perm < o.perm
	}
	if r.byGroup != o.byGroup {
		return !r.byGroup
	}
	return r.sub < o.sub
}

func newAWSSecurity(groups []cloud.SecurityGroup, nodeGroups []string) *awsSecurity {
	s := &awsSecurity{groups: make(map[string]*sgIndex, len(groups)), nodeGroups: nodeGroups}
	for i := range groups {
		g := &groups[i]
		ix := &sgIndex{id: g.ID, bySrc: map[string][]sgRule{}}
		for pi := range g.Ingress {
			p := &g.Ingress[pi]
			for ci, c := range p.CIDRs {
				if pfx, err := netip.ParsePrefix(c); err == nil {
					ix.cidrs = append(ix.cidrs, sgRule{perm: pi, sub: ci, prefix: pfx, source: c, p: p})
				}
			}
			for gi, sg := range p.GroupIDs {
				ix.bySrc[sg] = append(ix.bySrc[sg], sgRule{perm: pi, sub: gi, byGroup: true, source: sg, p: p})
			}
		}
		s.groups[g.ID] = ix
	}
	return s
}

// isAWS reports whether lb is one of the AWS model's load balancers.
func isAWS(lb *cloud.LoadBalancer) bool { return lb.Kind != "" }

// admittedBy is the ingress rule that let a packet in. Its name is built
// only when asked for: a health round asks a million times at 1,000 load
// balancers x 1,000 nodes, and formatting every answer was two thirds of
// the security groups' cost there.
type admittedBy struct {
	group string
	rule  sgRule
}

func (a admittedBy) String() string {
	if a.group == "" {
		return ""
	}
	return fmt.Sprintf("%s %s from %s", a.group, permPorts(*a.rule.p), a.rule.source)
}

// admits reports whether any ingress rule of groups lets a TCP packet to
// port in from srcIP, sent by a holder of srcGroups, and which rule.
// Security groups only allow: there is no deny rule to find.
func (s *awsSecurity) admits(groups []string, port int32, srcIP string, srcGroups []string) (admittedBy, bool) {
	src, err := netip.ParseAddr(srcIP)
	if err != nil {
		return admittedBy{}, false
	}
	for _, id := range groups {
		ix := s.groups[id]
		if ix == nil {
			continue
		}
		var best sgRule
		found := false
		consider := func(r sgRule) {
			if (!found || r.before(best)) && permCovers(*r.p, port) {
				best, found = r, true
			}
		}
		for _, r := range ix.cidrs {
			if r.prefix.Contains(src) {
				consider(r)
			}
		}
		for _, sg := range srcGroups {
			for _, r := range ix.bySrc[sg] {
				consider(r)
			}
		}
		if found {
			return admittedBy{group: ix.id, rule: best}, true
		}
	}
	return admittedBy{}, false
}

// permCovers: the rule's protocol and port range include TCP port.
func permCovers(p cloud.IPPermission, port int32) bool {
	switch {
	case p.Protocol == "-1" || strings.EqualFold(p.Protocol, "all"):
		return true
	case p.Protocol == "6" || strings.EqualFold(p.Protocol, "tcp"):
		return p.FromPort <= port && port <= p.ToPort
	}
	return false
}

func permPorts(p cloud.IPPermission) string {
	switch {
	case p.Protocol == "-1":
		return "all traffic"
	case p.FromPort == p.ToPort:
		return fmt.Sprintf("%s/%d", p.Protocol, p.FromPort)
	}
	return fmt.Sprintf("%s/%d-%d", p.Protocol, p.FromPort, p.ToPort)
}

// fromText names a packet's source for a missing-rule message: its
// address and the groups a rule may name instead.
func fromText(ip string, groups []string) string {
	if len(groups) == 0 {
		return ip
	}
	return ip + " (" + strings.Join(groups, ", ") + ")"
}

// lbAddress is the load balancer's address that sends to inst: its
// interface in the instance's zone, else its first one.
func lbAddress(lb *cloud.LoadBalancer, inst *cloud.Instance) string {
	if len(lb.Addresses) == 0 {
		return ""
	}
	if inst != nil {
		for _, a := range lb.Addresses {
			if a.Zone == inst.Zone {
				return a.IP
			}
		}
	}
	return lb.Addresses[0].IP
}

// awsSource is the source address the node sees for a connection from
// client through lb to inst, and how the trace says it.
func awsSource(lb *cloud.LoadBalancer, inst *cloud.Instance, client string) (string, i18n.Msg) {
	addr := cmp.Or(lbAddress(lb, inst), client)
	switch {
	case lb.Kind == cloud.LBKindClassic:
		return addr, why(tracetext.ViaELBProxy, "src", addr)
	case lb.PreserveClientIP:
		return client, why(tracetext.ViaNLBClientIP, "client", client)
	}
	return addr, why(tracetext.ViaNLBAddress, "src", addr)
}

// lbAdmits is the load balancer's own security groups on the way in. An
// NLB without groups admits everything (it had none before AWS added them,
// and the provider makes some only in its managed mode).
func (e *env) lbAdmits(lb *cloud.LoadBalancer, port int32, client string) (fail i18n.Msg, ok bool) {
	if len(lb.SecurityGroups) == 0 || e.cloud.aws == nil {
		return i18n.Msg{}, true
	}
	if _, ok := e.cloud.aws.admits(lb.SecurityGroups, port, client, nil); ok {
		return i18n.Msg{}, true
	}
	return why(tracetext.SGLoadBalancer, "lb", lb.Name, "groups", strings.Join(lb.SecurityGroups, ", "), "port", itoa(port), "from", client), false
}

// nodeAdmits is the instance's security groups on the way from lb to it:
// a rule may name the source address or one of the load balancer's
// groups.
func (e *env) nodeAdmits(lb *cloud.LoadBalancer, inst *cloud.Instance, port int32, src string) (fail i18n.Msg, ok bool) {
	if e.cloud.aws == nil {
		return i18n.Msg{}, true
	}
	groups := e.cloud.aws.nodeGroups
	if _, ok := e.cloud.aws.admits(groups, port, src, lb.SecurityGroups); ok {
		return i18n.Msg{}, true
	}
	return why(tracetext.SGInstance, "instance", inst.ID, "groups", strings.Join(groups, ", "), "port", itoa(port), "from", fromText(src, lb.SecurityGroups)), false
}

// routeAWSTarget follows a connection from an AWS load balancer to its
// instance target t: the source the node sees, the instance's security
// groups, then kube-proxy on the node.
func (e *env) routeAWSTarget(tr *Trace, lb *cloud.LoadBalancer, front string, picked i18n.Msg, t cloud.Target, inst *cloud.Instance, node *v1.Node) reached {
	src, via := awsSource(lb, inst, tr.ClientIP)
	tr.hop(Hop{Kind: HopLB, Node: nodeName(node), Address: front}.say(picked, via))
	tr.LBSourceIP = src
	if !tr.instanceServes(t, inst, node) {
		return reached{}
	}
	if fail, ok := e.nodeAdmits(lb, inst, t.Port, src); !ok {
		tr.hop(Hop{Kind: HopNode, Node: node.Name, Address: hostPort(cmp.Or(e.nodeIP(node), node.Name), t.Port)}.say(fail, i18n.Msg{}))
		tr.fail(statusDropped, fail)
		return reached{}
	}
	if slices.Contains(lb.ProxyProtocolPorts, t.Port) {
		tr.ProxyProtocolClientIP = tr.ClientIP
	}
	return e.routeNodePort(tr, node, t.Port, src)
}

// awsTargetHealth adds the security groups to a health check of an AWS
// load balancer's instance target: the check comes from the load
// balancer's own address, and a node whose groups do not admit it times
// out (Target.Timeout on AWS).
func (e *env) awsTargetHealth(lb *cloud.LoadBalancer, t cloud.Target, inst *cloud.Instance) (reason string, ok bool) {
	if inst == nil {
		return "", true
	}
	port := t.Port
	if hc := lb.HealthCheck; hc != nil && hc.Port != 0 {
		port = hc.Port
	}
	if fail, ok := e.nodeAdmits(lb, inst, port, lbAddress(lb, inst)); !ok {
		return tracetext.English(fail), false
	}
	return "", true
}
