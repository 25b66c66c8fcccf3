package dataplane

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/pubsub"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// Request kinds: where a request enters the network.
const (
	KindLoadBalancer = "loadbalancer" // at a load balancer listener
	KindNodePort     = "nodeport"     // at a node's NodePort
	KindClusterIP    = "clusterip"    // at a Service's ClusterIP, from inside the cluster
)

// Origins: who sent a request. Exercise checks count only requests a
// student sent (from the page or the API, or through a listener with curl
// or a browser), so a trace says where it came from.
const (
	OriginAPI      = "api"      // POST /api/requests, the page's request panel (the default)
	OriginListener = "listener" // a real connection to a load balancer listener (curl, a browser)
	OriginLab      = "lab"      // the lab itself (tests, tools): never a student's evidence
)

// Hop kinds, in the order a packet can meet them.
const (
	HopClient   = "client"   // the sender
	HopLB       = "lb"       // the load balancer picks a target
	HopNode     = "node"     // the packet reaches a node
	HopNodePort = "nodeport" // kube-proxy's NodePort rule matches
	HopDNAT     = "dnat"     // kube-proxy rewrites the destination to a Pod (and maybe the source)
	HopForward  = "forward"  // the extra hop to the node where the Pod runs
	HopPod      = "pod"      // the Pod receives the request
)

// Traffic policies as traces show them.
const (
	PolicyCluster = "Cluster"
	PolicyLocal   = "Local"
)

// Hop is one step of a packet's way.
type Hop struct {
	Kind    string `json:"kind"`
	Node    string `json:"node,omitempty"`
	Address string `json:"address,omitempty"`
	// Detail says in English what happened there, for API readers.
	// DetailKey and DetailArgs say the same as a lab/dataplane/tracetext
	// key, and ViaKey and ViaArgs how the packet went on (or why it could
	// not), so the page says both in its own language.
	Detail     string    `json:"detail"`
	DetailKey  string    `json:"detailKey,omitempty"`
	DetailArgs i18n.Args `json:"detailArgs,omitempty"`
	ViaKey     string    `json:"viaKey,omitempty"`
	ViaArgs    i18n.Args `json:"viaArgs,omitempty"`
}

// say fills a hop's detail from what happened there (m) and how the packet
// went on from it (via, zero when there is nothing to add).
func (h Hop) say(m, via i18n.Msg) Hop {
	h.DetailKey, h.DetailArgs, h.Detail = m.Key, m.Args, tracetext.English(m)
	if via.Key != "" {
		h.ViaKey, h.ViaArgs = via.Key, via.Args
		h.Detail += "; " + tracetext.English(via)
	}
	return h
}

// Trace is one request's way through the lab's network and how it ended.
// Status is the HTTP status the client got: the Pod's answer, or 502
// (connection refused: nothing answers there), 503 (no healthy target, or a
// Service with no endpoints, which kube-proxy rejects) or 504 (the packet
// was dropped, which a real client sees as a timeout).
type Trace struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Origin says who sent the request: OriginAPI, OriginListener or
	// OriginLab.
	Origin  string `json:"origin"`
	LB      string `json:"lb,omitempty"`
	Service string `json:"service,omitempty"` // namespace/name
	// ServiceUID tells a Service from an earlier one of the same name,
	// whose requests the page and the flow must not count.
	ServiceUID string `json:"serviceUID,omitempty"`
	ClientIP   string `json:"clientIP"`
	Hops       []Hop  `json:"hops"`
	// EntryNode is where the packet entered the cluster: the load balancer's
	// target node, the node whose NodePort was hit, or the client's node.
	EntryNode string `json:"entryNode,omitempty"`
	Pod       string `json:"pod,omitempty"` // namespace/name
	PodNode   string `json:"podNode,omitempty"`
	PodIP     string `json:"podIP,omitempty"`
	// ExtraHop: the Pod runs on another node than EntryNode, so the packet
	// crossed the network once more.
	ExtraHop          bool   `json:"extraHop"`
	SourceIPSeenByPod string `json:"sourceIPSeenByPod,omitempty"`
	// LBSourceIP is the source address an AWS load balancer's packet has
	// at the node: a Classic ELB's own VPC address, or the client's
	// through an NLB that preserves it.
	LBSourceIP string `json:"lbSourceIP,omitempty"`
	// ProxyProtocolClientIP is the client address in the PROXY protocol
	// header the load balancer sent first, when it sends one.
	ProxyProtocolClientIP string `json:"proxyProtocolClientIP,omitempty"`
	Policy                string `json:"policy,omitempty"`     // Cluster or Local
	TargetType            string `json:"targetType,omitempty"` // instance or ip, for load balancer traffic
	Status                int    `json:"status"`
	// Error says in English why the request failed, for API readers.
	// ErrorKey and ErrorArgs say the same as a lab/dataplane/tracetext key
	// and its arguments, so the page says it in its own language.
	Error     string    `json:"error,omitempty"`
	ErrorKey  string    `json:"errorKey,omitempty"`
	ErrorArgs i18n.Args `json:"errorArgs,omitempty"`
	// protocol is the transport kube-proxy matches rules by (TCP when
	// empty); only a Pod's own requests are ever UDP.
	protocol v1.Protocol
}

func (t *Trace) hop(h Hop) { t.Hops = append(t.Hops, h) }

// fail ends the trace: the packet goes no further, for the reason m.
func (t *Trace) fail(status int, m i18n.Msg) {
	t.Status, t.Error, t.ErrorKey, t.ErrorArgs = status, tracetext.English(m), m.Key, m.Args
}

// why is a tracetext key with its arguments given as name, value pairs.
func why(key string, nameValues ...string) i18n.Msg {
	var args i18n.Args
	if len(nameValues) > 0 {
		args = i18n.Args{}
		for i := 0; i+1 < len(nameValues); i += 2 {
			args[nameValues[i]] = nameValues[i+1]
		}
	}
	return i18n.Msg{Key: key, Args: args}
}

func (t Trace) clone() Trace {
	t.Hops = slices.Clone(t.Hops)
	return t
}

// Outcome statuses for requests that do not reach a Pod.
const (
	statusRefused  = 502
	statusRejected = 503
	statusDropped  = 504
)

// newTraceID is random rather than a counter so IDs stay unique across
// restarts of the lab, where the page may still show older traces.
func newTraceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails; it panics instead
	return hex.EncodeToString(b[:])
}

// traceLog keeps the last traces in a ring and fans new ones out. Sending
// never blocks: a subscriber that does not keep up misses traces, so one
// slow browser cannot stall the network.
type traceLog struct {
	mu   sync.Mutex
	ring []Trace
	next int // where the next trace goes
	full bool
	subs pubsub.Broadcaster[Trace]
}

func newTraceLog(size int) *traceLog {
	l := &traceLog{ring: make([]Trace, size)}
	l.subs.Copy = Trace.clone
	return l
}

func (l *traceLog) add(t Trace) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = t
	l.next = (l.next + 1) % len(l.ring)
	if l.next == 0 {
		l.full = true
	}
	// Under l.mu, so subscribers get traces in the ring's order.
	l.subs.Publish(t)
}

// list returns the kept traces, oldest first.
func (l *traceLog) list() []Trace {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Trace
	if l.full {
		out = make([]Trace, 0, len(l.ring))
		for _, t := range l.ring[l.next:] {
			out = append(out, t.clone())
		}
	} else {
		out = make([]Trace, 0, l.next)
	}
	for _, t := range l.ring[:l.next] {
		out = append(out, t.clone())
	}
	return out
}

func (l *traceLog) subscribe(buf int) (<-chan Trace, func()) {
	return l.subs.Subscribe(buf)
}

// Traces returns the kept traces, oldest first.
func (d *Dataplane) Traces() []Trace { return d.traces.list() }

// SubscribeTraces returns a channel that receives every new trace, with
// room for buf of them, and a cancel func (safe to call more than once).
// A full channel misses traces rather than slowing requests down.
func (d *Dataplane) SubscribeTraces(buf int) (<-chan Trace, func()) {
	return d.traces.subscribe(buf)
}
