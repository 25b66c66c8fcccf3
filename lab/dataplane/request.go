package dataplane

import (
	"cmp"
	"context"
	"net/http"
	"net/netip"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// Request is a simulated request. Kind says where it enters:
//
//   - "loadbalancer": at listener Port of load balancer LB (its name, DNS
//     name or IP; Port 0 means its only listener).
//   - "nodeport": at NodePort Port of the node named Node or having IP IP.
//   - "clusterip": at ClusterIP IP:Port, from a Pod on Node (optional).
//
// ClientIP defaults to 203.0.113.10, or to Node's IP for clusterip.
type Request struct {
	Kind     string `json:"kind"`
	LB       string `json:"lb,omitempty"`
	Node     string `json:"node,omitempty"`
	IP       string `json:"ip,omitempty"`
	Port     int32  `json:"port,omitempty"`
	ClientIP string `json:"clientIP,omitempty"`
	// Origin says who sends it (OriginAPI when empty); the trace carries it.
	Origin string `json:"origin,omitempty"`

	// httpReq is the real request when one came to a listener.
	httpReq *http.Request
}

// Do sends a simulated GET / through the same routing as a real connection
// to a listener, records its trace and returns it. Input that names nothing
// (unknown load balancer, no such NodePort...) is a *RequestError and leaves
// no trace; a request that fails on the way is a trace with Status and
// Error set.
func (d *Dataplane) Do(ctx context.Context, r Request) (Trace, error) {
	if err := ctx.Err(); err != nil {
		return Trace{}, err
	}
	if !d.isSynced() {
		return Trace{}, requestErrorf(ReasonNotSynced, "the data plane has not synced yet")
	}
	tr, _, err := d.route(r, "GET", "/")
	if err != nil {
		return Trace{}, err
	}
	d.traces.add(tr)
	return tr.clone(), nil
}

// route resolves r, follows it through the network and, if it reaches a
// Pod, asks the Pod for its answer to method path.
func (d *Dataplane) route(r Request, method, path string) (Trace, answer, error) {
	e := d.env()
	tr := Trace{ID: newTraceID(), Time: d.clock.Now(), Kind: r.Kind, ClientIP: r.ClientIP, Origin: cmp.Or(r.Origin, OriginAPI)}
	if r.ClientIP != "" {
		if _, err := netip.ParseAddr(r.ClientIP); err != nil {
			return tr, answer{}, requestErrorf(ReasonInvalid, "client IP %q is not an IP address", r.ClientIP)
		}
	}
	client := func(to string) {
		tr.hop(Hop{Kind: HopClient, Address: tr.ClientIP}.say(why(tracetext.HopClient, "method", method, "path", path, "to", to), i18n.Msg{}))
	}
	var got reached
	switch r.Kind {
	case KindLoadBalancer:
		lb := e.cloud.loadBalancer(r.LB)
		if lb == nil {
			return tr, answer{}, requestErrorf(ReasonUnknownLB, "no load balancer named %q", r.LB)
		}
		l, ok := findListener(lb, r.Port)
		if !ok {
			return tr, answer{}, requestErrorf(ReasonNoListener, "load balancer %s has no TCP listener on port %d", lb.Name, r.Port)
		}
		tr.ClientIP = cmp.Or(tr.ClientIP, defaultClientIP)
		client(hostPort(cmp.Or(lb.DNSName, lb.IP, lb.Name), l.Port))
		got = e.routeLoadBalancer(&tr, lb, l)
	case KindNodePort:
		var node *v1.Node
		switch {
		case r.Node != "":
			node = e.cluster.node(r.Node)
		case r.IP != "":
			node = e.nodeByIP(r.IP)
		}
		if node == nil {
			return tr, answer{}, requestErrorf(ReasonUnknownNode, "no node named %q or with IP %q", r.Node, r.IP)
		}
		if s, _ := e.cluster.serviceByNodePort(r.Port, v1.ProtocolTCP); s == nil {
			return tr, answer{}, requestErrorf(ReasonNoNodePort, "no Service has TCP NodePort %d", r.Port)
		}
		tr.ClientIP = cmp.Or(tr.ClientIP, defaultClientIP)
		client(hostPort(cmp.Or(e.nodeIP(node), node.Name), r.Port))
		got = e.routeNodePort(&tr, node, r.Port, tr.ClientIP)
	case KindClusterIP:
		svc, sp := e.cluster.serviceByClusterIP(r.IP, r.Port, v1.ProtocolTCP)
		if svc == nil {
			return tr, answer{}, requestErrorf(ReasonNoClusterIP, "no Service has ClusterIP %s with TCP port %d", r.IP, r.Port)
		}
		var from *v1.Node
		if r.Node != "" {
			if from = e.cluster.node(r.Node); from == nil {
				return tr, answer{}, requestErrorf(ReasonUnknownNode, "no node named %q", r.Node)
			}
		}
		tr.ClientIP = cmp.Or(tr.ClientIP, e.nodeIP(from), defaultClientIP)
		client(hostPort(r.IP, r.Port))
		got = e.routeClusterIP(&tr, from, svc, sp, r.IP)
	default:
		return tr, answer{}, requestErrorf(ReasonInvalid, "request kind %q must be loadbalancer, nodeport or clusterip", r.Kind)
	}
	if got.pod == nil {
		return tr, failureAnswer(tr), nil
	}
	// A Pod whose process does not listen refuses: the trace says so
	// and the answer is the failure's.
	a, _ := d.answer(got.pod, got.port, &tr, method, path, nil, nil, r.httpReq) // frompod.go
	return tr, a, nil
}

// findListener is lb's TCP listener on port, or its only TCP listener when
// port is 0.
func findListener(lb *cloud.LoadBalancer, port int32) (cloud.Listener, bool) {
	var tcp []cloud.Listener
	for _, l := range lb.Listeners {
		if protoOf(v1.Protocol(l.Protocol)) == v1.ProtocolTCP {
			if l.Port == port {
				return l, true
			}
			tcp = append(tcp, l)
		}
	}
	if port == 0 && len(tcp) == 1 {
		return tcp[0], true
	}
	return cloud.Listener{}, false
}
