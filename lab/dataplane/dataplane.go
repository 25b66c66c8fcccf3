package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Config configures a Dataplane.
type Config struct {
	Client kubernetes.Interface // required
	Cloud  *cloud.Cloud         // required
	// Profile decides how Pod IPs travel between nodes: with a Route
	// controller they need VPC routes; without one the lab assumes an
	// overlay network. (Pod IPs inside the VPC always work.)
	Profile profile.Profile
	// HealthCheckInterval is how often target health is computed and the
	// cloud is resynchronised from a full snapshot. Default 2s: shorter than
	// ELB's 10s so that a student sees the effect of a change quickly.
	HealthCheckInterval time.Duration
	// TraceBuffer is how many traces Traces keeps. Default 500.
	TraceBuffer int
	Clock       clock.WithTicker // default clock.RealClock{}
	Logger      *slog.Logger     // default: discard
	// OnDeliver hears every request delivered to a Pod (accesslog.go);
	// optional, called on the request's goroutine, must not block.
	OnDeliver func(Delivery)
	// ListenHost is the address load balancer listeners bind to, each on a
	// free port. Default 127.0.0.1: the listeners are for the student's own
	// machine.
	ListenHost string
}

const (
	defaultHealthCheckInterval = 2 * time.Second
	defaultTraceBuffer         = 500
	defaultListenHost          = "127.0.0.1"
	// defaultClientIP is the client of simulated requests (TEST-NET-3).
	defaultClientIP = "203.0.113.10"
	// TraceHeader carries the trace ID on every answer from a listener.
	TraceHeader = "X-Ccmlab-Trace"
)

func (c *Config) setDefaults() {
	c.HealthCheckInterval = cmp.Or(c.HealthCheckInterval, defaultHealthCheckInterval)
	c.TraceBuffer = cmp.Or(c.TraceBuffer, defaultTraceBuffer)
	c.ListenHost = cmp.Or(c.ListenHost, defaultListenHost)
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// validate checks a Config after defaults are applied.
func (c *Config) validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("a Kubernetes client is required"))
	}
	if c.Cloud == nil {
		errs = append(errs, errors.New("a cloud is required"))
	}
	if c.HealthCheckInterval < 0 {
		errs = append(errs, fmt.Errorf("health check interval %s must not be negative", c.HealthCheckInterval))
	}
	if c.TraceBuffer < 0 {
		errs = append(errs, fmt.Errorf("trace buffer %d must not be negative", c.TraceBuffer))
	}
	if c.ListenHost != "localhost" {
		if _, err := netip.ParseAddr(c.ListenHost); err != nil {
			errs = append(errs, fmt.Errorf("listen host %q must be an IP address or localhost", c.ListenHost))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	return nil
}

// Dataplane is the lab's kube-proxy and load balancer data path. Create it
// with New, start it with Run.
type Dataplane struct {
	cfg     Config
	log     *slog.Logger
	clock   clock.WithTicker
	vpc     string
	overlay bool

	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
	view    clusterView

	cloudView atomic.Pointer[cloudView]
	rr        roundRobin
	traces    *traceLog

	lmu       sync.Mutex
	listeners map[listenerKey]*lbListener
	closed    bool
	serving   sync.WaitGroup

	running  atomic.Bool
	syncedCh chan struct{}
	done     chan struct{}
}

// New builds a Dataplane; nothing runs until Run.
func New(cfg Config) (*Dataplane, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dataplane{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "dataplane"),
		clock:     cfg.Clock,
		vpc:       cfg.Cloud.Config().VPCCIDR,
		overlay:   !cfg.Profile.Has(profile.Route),
		rr:        roundRobin{next: map[string]uint64{}},
		traces:    newTraceLog(cfg.TraceBuffer),
		listeners: map[listenerKey]*lbListener{},
		syncedCh:  make(chan struct{}),
		done:      make(chan struct{}),
	}
	d.cloudView.Store(newCloudView(cloud.State{}, d.vpc))

	// Only what routing reads is kept: managedFields are the bulk of most
	// objects and nobody here looks at them.
	d.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTransform(kube.DropManagedFields))
	svc := d.factory.Core().V1().Services().Informer()
	eps := d.factory.Discovery().V1().EndpointSlices().Informer()
	nodes := d.factory.Core().V1().Nodes().Informer()
	pods := d.factory.Core().V1().Pods().Informer()
	for _, add := range []struct {
		inf cache.SharedIndexInformer
		idx cache.Indexers
	}{
		{svc, cache.Indexers{indexNodePort: serviceNodePortIndex, indexHealthCheck: serviceHealthCheckIndex, indexClusterIP: serviceClusterIPIndex}},
		{eps, cache.Indexers{indexService: sliceServiceIndex}},
		{nodes, cache.Indexers{indexInstance: nodeInstanceIndex}},
		{pods, cache.Indexers{indexPodIP: podIPIndex}},
	} {
		if err := add.inf.AddIndexers(add.idx); err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
		d.synced = append(d.synced, add.inf.HasSynced)
	}
	d.view = &listerView{svc: svc.GetIndexer(), slices: eps.GetIndexer(), nodeIdx: nodes.GetIndexer(), pods: pods.GetIndexer()}
	return d, nil
}

// Run watches the cluster and the cloud, serves the load balancer
// listeners and checks target health until ctx ends. It closes every
// listener before it returns, and returns nil when ctx ended. Call it once.
func (d *Dataplane) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("dataplane: Run may only be called once")
	}
	defer close(d.done)
	defer d.closeListeners()
	events, unsubscribe := d.cfg.Cloud.Subscribe(256)
	defer unsubscribe()

	d.factory.Start(ctx.Done())
	defer d.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), d.synced...) {
		return nil // ctx ended first
	}
	d.checkHealth(d.syncCloud())
	close(d.syncedCh)
	d.log.Info("data plane ready", "listeners", len(d.Listeners()))

	tick := d.clock.NewTicker(d.cfg.HealthCheckInterval)
	defer tick.Stop()
	var lastSeq uint64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			// The periodic snapshot also repairs anything a dropped event
			// left behind.
			d.checkHealth(d.syncCloud())
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// Drain what is already queued so a burst of cloud calls costs
			// one snapshot. A gap in Seq means this subscriber missed
			// events, so it resyncs whatever they were.
			resync := false
			for {
				resync = resync || relevantEvent(ev) || (lastSeq != 0 && ev.Seq != lastSeq+1)
				lastSeq = ev.Seq
				more := false
				select {
				case ev, more = <-events:
				default:
				}
				if !more {
					break
				}
			}
			if resync {
				d.syncCloud()
			}
		}
	}
}

func relevantEvent(ev cloud.Event) bool {
	switch ev.Kind {
	case cloud.EventLoadBalancer, cloud.EventInstance, cloud.EventRoute, cloud.EventELB, cloud.EventSecurityGroup:
		return true
	}
	return false
}

// syncCloud takes a fresh snapshot of the cloud for routing and opens or
// closes listeners to match it. Only Run's goroutine calls it.
func (d *Dataplane) syncCloud() *cloudView {
	c := d.cfg.Cloud
	// The lab's own load balancers, then the AWS model's Classic ELBs and
	// NLBs (made by the upstream AWS provider), with the security groups
	// those are checked against.
	lbs := c.LoadBalancerViews()
	if aws := c.AWSLoadBalancerViews(); len(aws) > 0 {
		lbs = append(slices.Clone(lbs), aws...)
	}
	cv := indexCloud(lbs, c.Instances(), c.Routes(), d.vpc)
	cv.aws = newAWSSecurity(c.SecurityGroupViews(), c.NodeSecurityGroups())
	d.cloudView.Store(cv)
	d.syncListeners(cv)
	return cv
}

// WaitForSync blocks until Run has filled its caches and opened the
// listeners of the load balancers that existed then.
func (d *Dataplane) WaitForSync(ctx context.Context) error {
	select {
	case <-d.syncedCh:
		return nil
	default:
	}
	select {
	case <-d.syncedCh:
		return nil
	case <-d.done:
		return errors.New("dataplane: stopped before it synced")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Dataplane) isSynced() bool {
	select {
	case <-d.syncedCh:
		return true
	default:
		return false
	}
}

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

// Traces returns the kept traces, oldest first.
func (d *Dataplane) Traces() []Trace { return d.traces.list() }

// SubscribeTraces returns a channel that receives every new trace, with
// room for buf of them, and a cancel func (safe to call more than once).
// A full channel misses traces rather than slowing requests down.
func (d *Dataplane) SubscribeTraces(buf int) (<-chan Trace, func()) {
	return d.traces.subscribe(buf)
}

// HealthCheckNodePort is kube-proxy's answer on node's healthCheckNodePort
// port, for showing next to a target's health.
func (d *Dataplane) HealthCheckNodePort(node string, port int32) (HealthCheckAnswer, error) {
	e := d.env()
	n := e.cluster.node(node)
	if n == nil {
		return HealthCheckAnswer{}, requestErrorf(ReasonUnknownNode, "no node named %q", node)
	}
	a, ok := e.healthCheckNodePort(n, port)
	if !ok {
		return HealthCheckAnswer{}, requestErrorf(ReasonNoNodePort, "no Service has healthCheckNodePort %d", port)
	}
	return a, nil
}

func (d *Dataplane) env() *env { return d.envFor(d.cloudView.Load()) }

func (d *Dataplane) envFor(cv *cloudView) *env {
	return &env{cluster: d.view, cloud: cv, overlay: d.overlay, pick: d.rr.pick}
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
	a := podAnswer(got.pod, got.port, method, path, &tr)
	tr.Status = a.status
	d.delivered(got.pod, got.port, &tr, method, path, r.httpReq, a)
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

// roundRobin keeps one counter per decision point (a listener, a Service
// port on a node). kube-proxy really picks at random; round-robin spreads
// a handful of requests visibly and makes the lab's behaviour repeatable.
type roundRobin struct {
	mu   sync.Mutex
	next map[string]uint64
}

func (r *roundRobin) pick(key string, n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.next[key]
	r.next[key] = i + 1
	return int(i % uint64(n))
}

// Informer indexes, so that a request costs lookups rather than scans.
const (
	indexNodePort    = "nodePort"    // "TCP/30080"
	indexHealthCheck = "healthCheck" // "32000"
	indexClusterIP   = "clusterIP"   // "10.96.0.10/TCP/80"
	indexService     = "service"     // EndpointSlice: "namespace/service"
	indexInstance    = "instance"    // Node: instance ID from spec.providerID
	indexPodIP       = "podIP"       // Pod: each status.podIPs entry
)

func protoPort(proto v1.Protocol, port int32) string {
	return string(protoOf(proto)) + "/" + strconv.Itoa(int(port))
}

func serviceNodePortIndex(obj any) ([]string, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, protoPort(p.Protocol, p.NodePort))
		}
	}
	return out, nil
}

func serviceHealthCheckIndex(obj any) ([]string, error) {
	if s, ok := obj.(*v1.Service); ok && s.Spec.HealthCheckNodePort != 0 {
		return []string{strconv.Itoa(int(s.Spec.HealthCheckNodePort))}, nil
	}
	return nil, nil
}

func serviceClusterIPIndex(obj any) ([]string, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ip := range clusterIPs(s) {
		for _, p := range s.Spec.Ports {
			out = append(out, ip+"/"+protoPort(p.Protocol, p.Port))
		}
	}
	return out, nil
}

func sliceServiceIndex(obj any) ([]string, error) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			return []string{s.Namespace + "/" + name}, nil
		}
	}
	return nil, nil
}

func nodeInstanceIndex(obj any) ([]string, error) {
	if n, ok := obj.(*v1.Node); ok {
		if id := providerInstanceID(n.Spec.ProviderID); id != "" {
			return []string{id}, nil
		}
	}
	return nil, nil
}

// podIPIndex leaves out host-network Pods (their IP is the node's) and
// finished ones (their IP may already belong to a new Pod).
func podIPIndex(obj any) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok || p.Spec.HostNetwork || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return nil, nil
	}
	var out []string
	for _, ip := range p.Status.PodIPs {
		if ip.IP != "" {
			out = append(out, ip.IP)
		}
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		out = append(out, p.Status.PodIP)
	}
	return out, nil
}

// listerView is clusterView over the informer caches.
type listerView struct {
	svc, slices, nodeIdx, pods cache.Indexer
}

func getAs[T any](idx cache.Indexer, key string) *T {
	obj, ok, err := idx.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

func byIndex[T any](idx cache.Indexer, index, value string) []*T {
	objs, err := idx.ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

func (v *listerView) service(ns, name string) *v1.Service {
	return getAs[v1.Service](v.svc, ns+"/"+name)
}

func (v *listerView) serviceByNodePort(port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range byIndex[v1.Service](v.svc, indexNodePort, protoPort(proto, port)) {
		if sp := nodePortOf(s, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (v *listerView) serviceByHealthCheckNodePort(port int32) *v1.Service {
	for _, s := range byIndex[v1.Service](v.svc, indexHealthCheck, strconv.Itoa(int(port))) {
		return s
	}
	return nil
}

func (v *listerView) serviceByClusterIP(ip string, port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range byIndex[v1.Service](v.svc, indexClusterIP, ip+"/"+protoPort(proto, port)) {
		if sp := clusterIPPortOf(s, ip, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (v *listerView) endpointSlices(ns, service string) []*discoveryv1.EndpointSlice {
	return byIndex[discoveryv1.EndpointSlice](v.slices, indexService, ns+"/"+service)
}

func (v *listerView) node(name string) *v1.Node {
	if name == "" {
		return nil
	}
	return getAs[v1.Node](v.nodeIdx, name)
}

func (v *listerView) nodes() []*v1.Node {
	objs := v.nodeIdx.List()
	out := make([]*v1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*v1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

func (v *listerView) nodeByInstanceID(id string) *v1.Node {
	for _, n := range byIndex[v1.Node](v.nodeIdx, indexInstance, id) {
		return n
	}
	return nil
}

func (v *listerView) pod(ns, name string) *v1.Pod {
	return getAs[v1.Pod](v.pods, ns+"/"+name)
}

// podByIP prefers a Pod that is not being deleted when two share an IP for
// a moment.
func (v *listerView) podByIP(ip string) *v1.Pod {
	var found *v1.Pod
	for _, p := range byIndex[v1.Pod](v.pods, indexPodIP, ip) {
		if found == nil || found.DeletionTimestamp != nil && p.DeletionTimestamp == nil {
			found = p
		}
	}
	return found
}

// hostOnly strips the port from a "host:port" remote address.
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
