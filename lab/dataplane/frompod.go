package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/netip"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// Requests from inside a Pod: a process of the lab's container runtime
// (curl, wget, nc in lab/podruntime) connects from the Pod's IP on its
// node. The destination decides the path, as in a cluster:
//
//   - a Service's ClusterIP: kube-proxy on the Pod's node DNATs it to an
//     endpoint; the source stays the Pod's IP;
//   - a node's IP on a NodePort: kube-proxy on that node, masquerading
//     under externalTrafficPolicy Cluster;
//   - a Pod's IP: straight there, over the VPC's routes between nodes
//     (a missing route drops it);
//   - a load balancer's address: out of the node (masqueraded to the
//     node's IP, as traffic leaving the Pod network is) and through the
//     load balancer;
//   - the Pod's own IP or 127.0.0.1: the Pod itself.
//
// Anything else is outside the lab: no packet leaves it, so the
// connection times out as one to an unreachable address would.

// Kinds of requests that only Pods send.
const (
	KindPodIP = "podip" // to a Pod's IP
	KindLocal = "local" // to the Pod itself
)

// OriginPod: a process in a Pod sent it (kubectl exec, run, a
// container's command).
const OriginPod = "pod"

// PodRequest is one HTTP request a process in From sends to IP:Port.
type PodRequest struct {
	From   *v1.Pod
	IP     string
	Port   int32
	Method string
	URI    string
	Header http.Header
	Body   []byte
	// Protocol is the transport: TCP (the default) or UDP. A UDP
	// request's Body is one datagram; kube-proxy matches it against the
	// Services' UDP ports only, as its iptables rules do (-p udp).
	Protocol v1.Protocol
	// Raw: the bytes the process sends are not an HTTP request (nc with
	// a line of text); Method holds them, and the server answers as its
	// HTTP server answers a malformed request.
	Raw bool
}

// PodResponse is what came back, with the request's trace.
type PodResponse struct {
	Status int
	Header http.Header
	Body   []byte
	Trace  Trace
}

// ConnError is a connection that failed before any answer: Refused
// (nothing listens, or kube-proxy rejects) or TimedOut (a packet was
// dropped), with the trace that says where.
type ConnError struct {
	Refused bool
	Trace   Trace
}

func (e *ConnError) Error() string {
	if e.Refused {
		return "connection refused"
	}
	return "connection timed out"
}

// ServeRequest is a request that reached a Pod's port, for Config.Serve.
type ServeRequest struct {
	Pod      *v1.Pod
	Port     int32
	Method   string
	URI      string
	Proto    string
	Header   http.Header
	Body     []byte
	SourceIP string
	Trace    string
	// Protocol is the transport the request came by (TCP when empty):
	// a UDP request reaches only what listens on the port for UDP.
	Protocol v1.Protocol
}

// ServeResult is a Pod's process's answer.
type ServeResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrNotListening is Config.Serve's answer when nothing in the Pod
// listens on the port: the connection is refused.
var ErrNotListening = errors.New("nothing listens on this port")

// ErrNotServed is Config.Serve's answer for a Pod it does not run: the
// data plane answers for it as before (nginx's page or the lab's echo).
var ErrNotServed = errors.New("not served by a process")

// FromPod sends r through the network and returns the answer. A request
// that names nothing (no source Pod, a bad address) is a *RequestError;
// one that fails on the way is a *ConnError, or an HTTP answer from a
// load balancer; both leave a trace.
func (d *Dataplane) FromPod(ctx context.Context, r PodRequest) (PodResponse, error) {
	if err := ctx.Err(); err != nil {
		return PodResponse{}, err
	}
	if !d.isSynced() {
		return PodResponse{}, requestErrorf(ReasonNotSynced, "the data plane has not synced yet")
	}
	if r.From == nil || r.From.Status.PodIP == "" {
		return PodResponse{}, requestErrorf(ReasonInvalid, "the source Pod has no IP yet")
	}
	dst, err := netip.ParseAddr(r.IP)
	if err != nil {
		return PodResponse{}, requestErrorf(ReasonInvalid, "%q is not an IP address", r.IP)
	}
	e := d.env()
	method, uri := cmp.Or(r.Method, http.MethodGet), cmp.Or(r.URI, "/")
	if r.Raw {
		method, uri = r.Method, ""
	}
	proto := cmp.Or(r.Protocol, v1.ProtocolTCP)
	from := e.cluster.node(r.From.Spec.NodeName)
	src := r.From.Status.PodIP
	tr := Trace{ID: newTraceID(), Time: d.clock.Now(), ClientIP: src, Origin: OriginPod, protocol: proto}
	to := hostPort(r.IP, r.Port)
	client := func() {
		tr.hop(Hop{Kind: HopClient, Node: nodeName(from), Address: src}.say(why(tracetext.HopClient, "method", method, "path", uri, "to", to), i18n.Msg{}))
	}
	var got reached
	switch {
	case dst.IsLoopback() || r.IP == src:
		tr.Kind = KindLocal
		client()
		got = e.deliver(&tr, nil, endpoint{IP: src, Port: r.Port, Node: r.From.Spec.NodeName, PodNS: r.From.Namespace, PodName: r.From.Name}, "127.0.0.1")
		tr.SourceIPSeenByPod = "127.0.0.1"
	default:
		if svc, sp := e.cluster.serviceByClusterIP(r.IP, r.Port, proto); svc != nil {
			tr.Kind = KindClusterIP
			client()
			got = e.routeClusterIP(&tr, from, svc, sp, r.IP)
			break
		}
		if node := e.nodeByIP(r.IP); node != nil {
			tr.Kind = KindNodePort
			client()
			if s, _ := e.cluster.serviceByNodePort(r.Port, proto); s == nil {
				tr.hop(Hop{Kind: HopNode, Node: node.Name, Address: to}.say(why(tracetext.HopArrives, "node", node.Name, "port", itoa(r.Port)), i18n.Msg{}))
				tr.fail(statusRefused, why(tracetext.NoNodePort, "port", itoa(r.Port)))
				break
			}
			got = e.routeNodePort(&tr, node, r.Port, src)
			break
		}
		if lb := d.lbByAddress(e, r.IP); lb != nil && proto == v1.ProtocolTCP {
			tr.Kind = KindLoadBalancer
			client()
			l, ok := findListener(lb, r.Port)
			if !ok {
				tr.LB = lb.Name
				tr.fail(statusDropped, why(tracetext.NotListening, "error", fmt.Sprintf("load balancer %s has no listener on port %d", lb.Name, r.Port)))
				break
			}
			// Leaving the Pod network, the node masquerades the Pod's
			// address to its own.
			tr.ClientIP = cmp.Or(e.nodeIP(from), src)
			got = e.routeLoadBalancer(&tr, lb, l)
			break
		}
		if pod := e.cluster.podByIP(r.IP); pod != nil {
			tr.Kind = KindPodIP
			client()
			got = e.deliver(&tr, from, endpoint{IP: r.IP, Port: r.Port, Node: pod.Spec.NodeName, PodNS: pod.Namespace, PodName: pod.Name}, src)
			break
		}
		tr.Kind = KindPodIP
		client()
		tr.fail(statusDropped, why(tracetext.NoPod, "ip", r.IP))
	}
	resp := PodResponse{}
	if got.pod == nil {
		d.traces.add(tr)
		if tr.Kind == KindLoadBalancer && tr.Status == statusRejected && !d.layer4(listenerKey{tr.LB, r.Port}) {
			// A load balancer with no healthy target answers itself,
			// unless it only carries connections (an NLB, a Classic
			// ELB's TCP listener): that one resets (listeners.go).
			a := failureAnswer(tr)
			return PodResponse{Status: a.status, Header: a.header, Body: a.body, Trace: tr.clone()}, nil
		}
		return resp, &ConnError{Refused: tr.Status != statusDropped, Trace: tr.clone()}
	}
	var hr *http.Request
	if r.Raw || proto != v1.ProtocolTCP {
		// Not HTTP/1.1: the server sees no protocol version.
		hr = &http.Request{Method: method, Header: r.Header}
		if hr.Header == nil {
			hr.Header = http.Header{}
		}
	}
	a, err := d.answer(got.pod, got.port, &tr, method, uri, r.Header, r.Body, hr)
	d.traces.add(tr)
	if err != nil {
		return resp, &ConnError{Refused: true, Trace: tr.clone()}
	}
	return PodResponse{Status: a.status, Header: a.header, Body: a.body, Trace: tr.clone()}, nil
}

// answer is pod's answer on port: its process's (Config.Serve), or the
// data plane's own for a Pod no process serves. Nothing listening fails
// the trace and is ErrNotListening.
func (d *Dataplane) answer(pod *v1.Pod, port int32, tr *Trace, method, uri string, h http.Header, body []byte, hr *http.Request) (answer, error) {
	if d.cfg.Serve != nil {
		proto := "HTTP/1.1"
		if hr != nil {
			proto, h = hr.Proto, hr.Header
		}
		res, err := d.cfg.Serve(ServeRequest{
			Pod: pod, Port: port, Method: method, URI: uri, Proto: proto, Header: h, Body: body,
			SourceIP: cmp.Or(tr.ProxyProtocolClientIP, tr.SourceIPSeenByPod), Trace: tr.ID,
			Protocol: cmp.Or(tr.protocol, v1.ProtocolTCP),
		})
		switch {
		case err == nil:
			tr.Status = res.Status
			return answer{status: res.Status, header: res.Header, body: res.Body}, nil
		case errors.Is(err, ErrNotListening):
			tr.fail(statusRefused, why(tracetext.NotListening, "error", fmt.Sprintf("nothing in Pod %s listens on port %d", tr.Pod, port)))
			return failureAnswer(*tr), ErrNotListening
		}
	}
	a := podAnswer(pod, port, method, uri, tr)
	tr.Status = a.status
	d.delivered(pod, port, tr, method, uri, hr, a)
	return a, nil
}

// lbByAddress is the load balancer that has address ip: its IP, one of
// its VPC addresses, or the address its DNS name resolves to (LBAddress).
func (d *Dataplane) lbByAddress(e *env, ip string) *cloud.LoadBalancer {
	for _, lb := range e.cloud.lbs {
		if lb.IP == ip {
			return lb
		}
		for _, a := range lbAddresses(lb) {
			if a == ip {
				return lb
			}
		}
	}
	return nil
}

// lbAddresses are the addresses a load balancer's DNS name resolves to
// inside the VPC: an AWS load balancer's own addresses in its subnets;
// the lab's own, which have none, one stable address per name from
// TEST-NET-2 (198.51.100.0/24), so that a lookup and a connection agree.
func lbAddresses(lb *cloud.LoadBalancer) []string {
	if lb.IP != "" {
		return []string{lb.IP}
	}
	if len(lb.Addresses) > 0 {
		out := make([]string, 0, len(lb.Addresses))
		for _, a := range lb.Addresses {
			out = append(out, a.IP)
		}
		return out
	}
	if lb.DNSName == "" {
		return nil
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(lb.DNSName))
	return []string{"198.51.100." + strconv.Itoa(int(h.Sum32()%254)+1)}
}

// DefaultAnswer is the data plane's own answer for a Pod no process
// serves (nginx's page or the lab's echo page, pod.go), for a request
// that reached it another way than through the network (port-forward).
func (d *Dataplane) DefaultAnswer(r ServeRequest) ServeResult {
	tr := Trace{Pod: r.Pod.Namespace + "/" + r.Pod.Name, PodNode: r.Pod.Spec.NodeName, PodIP: r.Pod.Status.PodIP, SourceIPSeenByPod: r.SourceIP}
	a := podAnswer(r.Pod, r.Port, r.Method, r.URI, &tr)
	return ServeResult{Status: a.status, Header: a.header, Body: a.body}
}
