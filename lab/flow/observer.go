package flow

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Change is one thing the page should redraw. Data is the whole new state
// of the item (never a delta), so a client that missed one change is
// repaired by the next.
type Change struct {
	Type Kind   `json:"type"`
	Op   Op     `json:"op"`
	Key  string `json:"key"`
	Data any    `json:"data,omitempty"`
}

// Kind says what a Change carries. The observer owns these names and
// server/stream sends them as its envelope types, so the two cannot drift.
type Kind string

// The kinds of Change, one per view the observer keeps.
const (
	KindNode        Kind = "node"        // Data is a NodeView
	KindPod         Kind = "pod"         // Data is a PodView
	KindService     Kind = "service"     // Data is a ServiceView
	KindEvent       Kind = "event"       // Data is an EventView
	KindServiceFlow Kind = "serviceflow" // Data is a ServiceFlow
	KindNodeFlow    Kind = "nodeflow"    // Data is a NodeFlow
)

// Op is what a Change did to the item under its key.
type Op string

// The ops of a Change; server/stream reuses them for every change message.
const (
	OpUpsert Op = "upsert" // Data is the whole new item
	OpDelete Op = "delete" // no Data
)

// Config wires an Observer.
type Config struct {
	Client kubernetes.Interface
	Cloud  *cloud.Cloud
	// Controllers reports which CCM controllers run right now; the flows use
	// it to say "no Service controller" rather than just "not yet".
	Controllers func() map[string]bool
	// OnChange is called, under the Observer's lock and in order, for every
	// change. It must not block (the hub's Publish does not).
	OnChange func(Change)
	Clock    clock.Clock
	Logger   *slog.Logger
	// RecentEvents is how many Kubernetes Events the snapshot keeps.
	RecentEvents int
}

func (c *Config) validate() error {
	if c.Client == nil || c.Cloud == nil {
		return errors.New("flow: client and cloud are required")
	}
	if c.Controllers == nil {
		c.Controllers = func() map[string]bool { return map[string]bool{} }
	}
	if c.OnChange == nil {
		c.OnChange = func(Change) {}
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RecentEvents == 0 {
		c.RecentEvents = 200
	}
	if c.RecentEvents < 0 {
		return errors.New("flow: RecentEvents must not be negative")
	}
	return nil
}

// Snapshot is everything the page needs to draw from scratch.
type Snapshot struct {
	Nodes        []NodeView    `json:"nodes"`
	Pods         []PodView     `json:"pods"`
	Services     []ServiceView `json:"services"`
	Events       []EventView   `json:"events"`
	ServiceFlows []ServiceFlow `json:"serviceFlows"`
	NodeFlows    []NodeFlow    `json:"nodeFlows"`
}

const (
	callsKept  = 64 // per LB or node: enough for the latest error and success
	eventsKept = 32 // per object
)

// Observer watches the apiserver and the cloud and keeps views and flows.
type Observer struct {
	cfg     Config
	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced

	mu        sync.Mutex
	nodes     map[string]NodeView
	pods      map[string]PodView
	services  map[string]ServiceView
	endpoints map[string]int          // service key -> ready endpoints
	slices    map[string]sliceInfo    // slice key -> its service and count
	objEvents map[string][]EventView  // "Kind/ns/name" -> events, oldest first
	recent    []EventView             // newest last
	lbCalls   map[string][]cloud.Call // LB name -> calls
	nodeCalls map[string][]cloud.Call // node name or instance ID -> DescribeInstances calls
	lbOwner   lbOwners                // LB name <-> service key
	// eligible caches eligibleNodesLocked between node changes (-1: to
	// count): every Service's recompute asks, and at 1,000 nodes a node's
	// update recomputes each waiting Service.
	eligible  int
	traces    map[string]TraceInfo // service key -> last trace
	svcFlows  map[string]ServiceFlow
	nodeFlows map[string]NodeFlow
	firstSeen map[string]map[int]time.Time // flow key -> step -> when first seen done
}

type sliceInfo struct {
	service string
	ready   int
}

// New builds an Observer; Run starts it.
func New(cfg Config) (*Observer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &Observer{
		cfg:       cfg,
		nodes:     map[string]NodeView{},
		pods:      map[string]PodView{},
		services:  map[string]ServiceView{},
		endpoints: map[string]int{},
		slices:    map[string]sliceInfo{},
		objEvents: map[string][]EventView{},
		lbCalls:   map[string][]cloud.Call{},
		nodeCalls: map[string][]cloud.Call{},
		lbOwner:   newLBOwners(),
		eligible:  -1,
		traces:    map[string]TraceInfo{},
		svcFlows:  map[string]ServiceFlow{},
		nodeFlows: map[string]NodeFlow{},
		firstSeen: map[string]map[int]time.Time{},
	}
	o.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	add := func(inf cache.SharedIndexInformer, upsert func(any), remove func(any)) {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    upsert,
			UpdateFunc: func(_, obj any) { upsert(obj) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				remove(obj)
			},
		})
		o.synced = append(o.synced, inf.HasSynced)
	}
	add(o.factory.Core().V1().Nodes().Informer(), o.onNode, o.onNodeDelete)
	add(o.factory.Core().V1().Pods().Informer(), o.onPod, o.onPodDelete)
	add(o.factory.Core().V1().Services().Informer(), o.onService, o.onServiceDelete)
	add(o.factory.Discovery().V1().EndpointSlices().Informer(), o.onSlice, o.onSliceDelete)
	add(o.factory.Events().V1().Events().Informer(), o.onEvent, func(any) {})
	return o, nil
}

// Run watches until ctx ends.
func (o *Observer) Run(ctx context.Context) error {
	events, cancel := o.cfg.Cloud.Subscribe(4096)
	defer cancel()
	// Calls made before the observer started (a restart) still explain
	// where a flow stands.
	o.mu.Lock()
	for _, c := range o.cfg.Cloud.Calls(0) {
		o.recordCallLocked(c)
	}
	o.mu.Unlock()
	o.factory.Start(ctx.Done())
	defer o.factory.Shutdown()

	var lastSeq uint64
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-events:
			if !ok {
				return nil
			}
			gap := lastSeq != 0 && e.Seq != lastSeq+1
			lastSeq = e.Seq
			o.onCloudEvent(e, gap)
		}
	}
}

// WaitForSync returns once the informers have listed everything.
func (o *Observer) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), o.synced...) {
		return errors.New("flow: informers did not sync")
	}
	return nil
}

// ObserveTrace records a request through the data plane (step 6).
func (o *Observer) ObserveTrace(t TraceInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := t.Service
	if key == "" {
		key = o.lbOwner.get(t.LB)
	}
	if key == "" {
		return
	}
	if v, ok := o.services[key]; ok && t.ServiceUID != "" && v.UID != "" && v.UID != t.ServiceUID {
		return // a request to an earlier Service of this name
	}
	o.traces[key] = t
	o.recomputeServiceLocked(key)
}

// ControllersChanged re-derives every flow after a controller was switched,
// because "who could act" changed for all of them.
func (o *Observer) ControllersChanged() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recomputeAllLocked()
}

// Snapshot returns a consistent copy of everything.
func (o *Observer) Snapshot() Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := Snapshot{
		Nodes: []NodeView{}, Pods: []PodView{}, Services: []ServiceView{},
		Events: append([]EventView{}, o.recent...), ServiceFlows: []ServiceFlow{}, NodeFlows: []NodeFlow{},
	}
	for _, k := range sortedKeys(o.nodes) {
		s.Nodes = append(s.Nodes, o.nodes[k])
	}
	for _, k := range sortedKeys(o.pods) {
		s.Pods = append(s.Pods, o.pods[k])
	}
	for _, k := range sortedKeys(o.services) {
		s.Services = append(s.Services, o.services[k])
	}
	for _, k := range sortedKeys(o.svcFlows) {
		s.ServiceFlows = append(s.ServiceFlows, o.svcFlows[k])
	}
	for _, k := range sortedKeys(o.nodeFlows) {
		s.NodeFlows = append(s.NodeFlows, o.nodeFlows[k])
	}
	return s
}

// ServiceFlow returns the flow of one Service.
func (o *Observer) ServiceFlow(key string) (ServiceFlow, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.svcFlows[key]
	return f, ok
}

// Service returns the view of one Service.
func (o *Observer) Service(key string) (ServiceView, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.services[key]
	return v, ok
}

// NodeFlow returns the flow of one node.
func (o *Observer) NodeFlow(name string) (NodeFlow, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.nodeFlows[name]
	return f, ok
}

// EventsFor returns the events about one object, oldest first.
func (o *Observer) EventsFor(kind, namespace, name string) []EventView {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]EventView{}, o.objEvents[kind+"/"+namespace+"/"+name]...)
}

func (o *Observer) emit(c Change) { o.cfg.OnChange(c) }

// --- informer handlers ---

func (o *Observer) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	v := NewNodeView(n)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nodes[v.Name] = v
	o.eligible = -1
	o.emit(Change{Type: KindNode, Op: OpUpsert, Key: v.Name, Data: v})
	o.recomputeNodeLocked(v.Name)
	// Eligible nodes changed for Services waiting on targets.
	o.recomputeServicesBeforeLocked(4)
}

func (o *Observer) onNodeDelete(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.nodes, n.Name)
	o.eligible = -1
	o.emit(Change{Type: KindNode, Op: OpDelete, Key: n.Name})
	o.recomputeNodeLocked(n.Name)
}

func podKey(ns, name string) string { return ns + "/" + name }

func (o *Observer) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	v := NewPodView(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	key := podKey(v.Namespace, v.Name)
	old := o.pods[key]
	o.pods[key] = v
	o.emit(Change{Type: KindPod, Op: OpUpsert, Key: key, Data: v})
	if v.Node != "" && old.Node != v.Node {
		o.recomputeNodeLocked(v.Node)
	}
}

func (o *Observer) onPodDelete(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := podKey(p.Namespace, p.Name)
	delete(o.pods, key)
	o.emit(Change{Type: KindPod, Op: OpDelete, Key: key})
}

func (o *Observer) onService(obj any) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	v := NewServiceView(s)
	o.mu.Lock()
	defer o.mu.Unlock()
	key := v.Key()
	old, had := o.services[key]
	o.services[key] = v
	if !had || old.UID != v.UID {
		// A new Service under a used name: a load balancer of the
		// earlier one (its deletion may still be running) is not its.
		for _, name := range o.lbOwner.of(key) {
			if o.staleLBLocked(name, key) {
				o.lbOwner.del(name)
			}
		}
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && v.LoadBalancerClass == "" {
		// Without a class the annotations decide who makes it: the CCM,
		// under the name it derives, or the load balancer controller,
		// whose NLB is found by its service.k8s.aws/stack tag when it
		// appears.
		if !ccmnames.LBCExternal(s.Annotations) {
			o.lbOwner.set(cloudprovider.DefaultLoadBalancerName(s), key)
		}
	}
	o.emit(Change{Type: KindService, Op: OpUpsert, Key: key, Data: v})
	o.recomputeServiceLocked(key)
}

func (o *Observer) onServiceDelete(obj any) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := podKey(s.Namespace, s.Name)
	delete(o.services, key)
	delete(o.traces, key)
	// A Service created again under the same name has a new UID and so a
	// new load balancer: forget the old one's name.
	for _, name := range o.lbOwner.of(key) {
		o.lbOwner.del(name)
	}
	o.emit(Change{Type: KindService, Op: OpDelete, Key: key})
	o.recomputeServiceLocked(key)
}

func sliceReady(es *discoveryv1.EndpointSlice) int {
	n := 0
	for _, ep := range es.Endpoints {
		if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
			n += len(ep.Addresses)
		}
	}
	return n
}

func (o *Observer) onSlice(obj any) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	svc := es.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := podKey(es.Namespace, svc)
	o.setSliceLocked(podKey(es.Namespace, es.Name), sliceInfo{service: key, ready: sliceReady(es)})
	o.recomputeServiceLocked(key)
}

func (o *Observer) onSliceDelete(obj any) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	sk := podKey(es.Namespace, es.Name)
	old := o.slices[sk]
	o.setSliceLocked(sk, sliceInfo{})
	delete(o.slices, sk)
	if old.service != "" {
		o.recomputeServiceLocked(old.service)
	}
}

func (o *Observer) setSliceLocked(sliceKey string, info sliceInfo) {
	if old, ok := o.slices[sliceKey]; ok {
		o.endpoints[old.service] -= old.ready
	}
	if info.service != "" {
		o.slices[sliceKey] = info
		o.endpoints[info.service] += info.ready
	}
}

func (o *Observer) onEvent(obj any) {
	e, ok := obj.(*eventsv1.Event)
	if !ok {
		return
	}
	v := NewEventView(e)
	o.mu.Lock()
	defer o.mu.Unlock()
	objKey := v.Kind + "/" + e.Regarding.Namespace + "/" + v.Object
	list := o.objEvents[objKey]
	// An Event object is updated in place when it repeats; keep one entry.
	for i := range list {
		if list[i].Name == v.Name {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	list = append(list, v)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.Before(list[j].Time) })
	if len(list) > eventsKept {
		list = list[len(list)-eventsKept:]
	}
	o.objEvents[objKey] = list
	o.recent = append(o.recent, v)
	if len(o.recent) > o.cfg.RecentEvents {
		o.recent = o.recent[len(o.recent)-o.cfg.RecentEvents:]
	}
	o.emit(Change{Type: KindEvent, Op: OpUpsert, Key: v.Namespace + "/" + v.Name, Data: v})
	switch v.Kind {
	case "Service":
		o.recomputeServiceLocked(podKey(e.Regarding.Namespace, v.Object))
	case "Node":
		o.recomputeNodeLocked(v.Object)
	}
}

// --- cloud ---

func (o *Observer) onCloudEvent(e cloud.Event, gap bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if gap {
		// Events were dropped: re-read what the cloud has and redo every flow.
		for _, c := range o.cfg.Cloud.Calls(0) {
			o.recordCallLocked(c)
		}
		o.recomputeAllLocked()
		return
	}
	switch e.Kind {
	case cloud.EventCall:
		if e.Call == nil || e.Call.State != cloud.CallDone {
			return
		}
		for _, k := range o.recordCallLocked(*e.Call) {
			o.recomputeKeyLocked(k)
		}
	case cloud.EventLoadBalancer:
		if lb, ok := o.cfg.Cloud.LookupLoadBalancer(e.ID); ok {
			o.ownLocked(lb)
		}
		if key := o.lbOwner.get(e.ID); key != "" {
			o.recomputeServiceLocked(key)
		}
	case cloud.EventELB:
		// A Classic ELB or NLB of the upstream AWS provider, or one of its
		// target groups or listeners, changed (e.ID is a name or an ARN).
		lb, svc := o.cfg.Cloud.AWSResourceOwner(e.ID)
		if lb != "" {
			o.ownAWSLocked(lb)
			svc = cmp.Or(o.lbOwner.get(lb), svc)
		}
		if svc != "" {
			o.recomputeServiceLocked(svc)
		}
	case cloud.EventInstance:
		if inst, ok := o.cfg.Cloud.LookupInstance(e.ID); ok {
			o.recomputeNodeLocked(inst.PrivateDNSName)
		}
	}
}

// ownLocked learns which Service an LB belongs to from its tags, which is
// how LBs created by the add-on (with their own names) are found.
func (o *Observer) ownLocked(lb cloud.LoadBalancer) {
	if svc := cloud.TaggedService(lb.Tags); svc != "" && !o.staleLBLocked(lb.Name, svc) {
		o.lbOwner.set(lb.Name, svc)
	}
}

// staleLBLocked says whether name is the CCM's load balancer of an
// earlier Service of key's name: the CCM names a load balancer after its
// Service's UID (cloudprovider.DefaultLoadBalancerName, "a" and the UID
// without dashes, 32 characters), and the tag the old one keeps names
// only namespace/name. Its calls (the deletion of the old one) must not
// become the new Service's evidence.
func (o *Observer) staleLBLocked(name, key string) bool {
	v, ok := o.services[key]
	if !ok || v.UID == "" || !ccmLBName.MatchString(name) {
		return false
	}
	own := "a" + strings.ReplaceAll(v.UID, "-", "")
	if len(own) > 32 {
		own = own[:32]
	}
	return name != own
}

// ccmLBName is the shape of cloudprovider.DefaultLoadBalancerName.
var ccmLBName = regexp.MustCompile(`^a[0-9a-f]{31}$`)

// ownAWSLocked learns the owner of a Classic ELB or NLB from its tags.
func (o *Observer) ownAWSLocked(name string) {
	if lb, ok := o.cfg.Cloud.LookupLoadBalancer(name); ok {
		if svc := cloud.TaggedService(lb.Tags); svc != "" && !o.staleLBLocked(name, svc) {
			o.lbOwner.set(name, svc)
		}
	}
}

type recomputeKey struct {
	service, node string
}

// recordCallLocked files a finished call under the LB or node it is about
// and says which flows to redo. Calls are replaced by Seq so replaying the
// log after a gap does not duplicate them.
func (o *Observer) recordCallLocked(c cloud.Call) []recomputeKey {
	if c.State != cloud.CallDone {
		return nil
	}
	var keys []recomputeKey
	put := func(m map[string][]cloud.Call, k string) {
		list := m[k]
		for i := range list {
			if list[i].Seq == c.Seq {
				list[i] = c
				m[k] = list
				return
			}
		}
		list = append(list, c)
		if len(list) > callsKept {
			list = list[len(list)-callsKept:]
		}
		m[k] = list
	}
	if awsLBCall(c) {
		// The upstream AWS provider's calls through the AWS API name load
		// balancers, ARNs, target groups and security groups: file each
		// under the load balancer it is about.
		for _, name := range o.awsCallLBsLocked(c) {
			put(o.lbCalls, name)
			o.ownAWSLocked(name)
			if svc := o.lbOwner.get(name); svc != "" {
				keys = append(keys, recomputeKey{service: svc})
			}
		}
		return keys
	}
	switch c.Action {
	case cloud.ActionCreateLoadBalancer, cloud.ActionRegisterTargets, cloud.ActionDeregisterTargets,
		cloud.ActionConfigureHealthCheck, cloud.ActionModifyListeners, cloud.ActionDeleteLoadBalancer,
		cloud.ActionDescribeLoadBalancers:
		for _, name := range c.Resources {
			put(o.lbCalls, name)
			if lb, ok := o.cfg.Cloud.LookupLoadBalancer(name); ok {
				o.ownLocked(lb)
			}
			if svc := o.lbOwner.get(name); svc != "" {
				keys = append(keys, recomputeKey{service: svc})
			}
		}
	case cloud.ActionDescribeInstances:
		// Only the Node controller's questions are steps of a node's flow
		// (deriveNode). The Service controller asks about every node on
		// every load balancer sync: filing those would redo every node's
		// flow once per Service, a million times at 1,000 x 1,000.
		if c.Caller != nodeControllerCaller {
			break
		}
		for _, r := range c.Resources {
			put(o.nodeCalls, r)
			if inst, ok := o.cfg.Cloud.LookupInstance(r); ok {
				keys = append(keys, recomputeKey{node: inst.PrivateDNSName})
			}
		}
	}
	return keys
}

// --- derivation ---

func (o *Observer) recomputeKeyLocked(k recomputeKey) {
	if k.service != "" {
		o.recomputeServiceLocked(k.service)
	}
	if k.node != "" {
		o.recomputeNodeLocked(k.node)
	}
}

func (o *Observer) recomputeAllLocked() {
	for k := range o.services {
		o.recomputeServiceLocked(k)
	}
	for k := range o.svcFlows {
		if _, ok := o.services[k]; !ok {
			o.recomputeServiceLocked(k)
		}
	}
	for k := range o.nodes {
		o.recomputeNodeLocked(k)
	}
}

func (o *Observer) recomputeServicesBeforeLocked(step int) {
	for k, f := range o.svcFlows {
		if f.Step < step {
			o.recomputeServiceLocked(k)
		}
	}
}

func (o *Observer) eligibleNodesLocked() int {
	if o.eligible >= 0 {
		return o.eligible
	}
	n := 0
	for _, v := range o.nodes {
		if v.InLBNodeSet() {
			n++
		}
	}
	o.eligible = n
	return n
}

func (o *Observer) lbNameLocked(key string) string {
	names := o.lbOwner.of(key)
	switch len(names) {
	case 0:
		return ""
	case 1:
		// The usual case, on the path of every recorded call: no lookup
		// (LookupLoadBalancer copies every target).
		return names[0]
	}
	// A Service can own two names (the CCM's, and the load balancer
	// controller's after an annotation changed hands): the one that exists
	// in the cloud wins, then the first in order, never the map's whim.
	slices.Sort(names)
	for _, name := range names {
		if _, ok := o.cfg.Cloud.LookupLoadBalancer(name); ok {
			return name
		}
	}
	return names[0]
}

// stampLocked gives each done step the time of the evidence that
// completed it: the time a step first showed done is kept while it stays
// done (a later sync's call or a repeated event does not move it), a
// step without a time gets the moment the lab saw it done, and no step
// shows a time before the step it follows (events have whole seconds,
// calls milliseconds: an event can seem to come before the call that
// caused it). A step that is no longer done forgets its time.
func (o *Observer) stampLocked(flowKey string, steps []Step) {
	seen := o.firstSeen[flowKey]
	if seen == nil {
		seen = map[int]time.Time{}
		o.firstSeen[flowKey] = seen
	}
	now := o.cfg.Clock.Now()
	var prev time.Time
	for i := range steps {
		s := &steps[i]
		if s.Status != StepDone {
			delete(seen, s.N)
			continue
		}
		at, ok := seen[s.N]
		if !ok {
			at = s.At
			if at.IsZero() {
				at = now
			}
			seen[s.N] = at
		}
		if at.Before(prev) {
			at = prev
		}
		s.At, prev = at, at
	}
}

func (o *Observer) recomputeServiceLocked(key string) {
	v, ok := o.services[key]
	if !ok || v.Type != string(corev1.ServiceTypeLoadBalancer) {
		if _, had := o.svcFlows[key]; had {
			delete(o.svcFlows, key)
			delete(o.firstSeen, "svc/"+key)
			o.emit(Change{Type: KindServiceFlow, Op: OpDelete, Key: key})
		}
		return
	}
	in := serviceInput{
		svc:           v,
		lbName:        o.lbNameLocked(key),
		events:        o.objEvents["Service/"+key],
		controllers:   o.cfg.Controllers(),
		eligibleNodes: o.eligibleNodesLocked(),
		endpoints:     o.endpoints[key],
	}
	if in.lbName != "" {
		in.calls = o.lbCalls[in.lbName]
		if lb, ok := o.cfg.Cloud.LookupLoadBalancer(in.lbName); ok && lb.Kind != "" {
			in.awsLB = &lb
		} else if ok {
			in.lb = &lb
		}
	}
	if t, ok := o.traces[key]; ok {
		in.lastTrace = &t
	}
	f := deriveService(in, nil)
	o.stampLocked("svc/"+key, f.Steps)
	if old, ok := o.svcFlows[key]; ok && reflect.DeepEqual(old, f) {
		return
	}
	o.svcFlows[key] = f
	o.emit(Change{Type: KindServiceFlow, Op: OpUpsert, Key: key, Data: f})
}

func (o *Observer) recomputeNodeLocked(name string) {
	in := nodeInput{name: name, controllers: o.cfg.Controllers()}
	if v, ok := o.nodes[name]; ok {
		in.node = &v
	}
	if inst, ok := o.cfg.Cloud.LookupInstance(name); ok {
		in.instance = &inst
		in.queries = append(append([]cloud.Call{}, o.nodeCalls[name]...), o.nodeCalls[inst.ID]...)
		sort.Slice(in.queries, func(i, j int) bool { return in.queries[i].Seq < in.queries[j].Seq })
	}
	if in.node == nil && (in.instance == nil || in.instance.State == cloud.InstanceTerminated) {
		if _, had := o.nodeFlows[name]; had {
			delete(o.nodeFlows, name)
			delete(o.firstSeen, "node/"+name)
			o.emit(Change{Type: KindNodeFlow, Op: OpDelete, Key: name})
		}
		return
	}
	for _, p := range o.pods {
		if p.Node == name && (in.firstPod == nil || p.Scheduled.Before(in.firstPod.Scheduled)) {
			p := p
			in.firstPod = &p
		}
	}
	f := deriveNode(in, nil)
	o.stampLocked("node/"+name, f.Steps)
	if old, ok := o.nodeFlows[name]; ok && reflect.DeepEqual(old, f) {
		return
	}
	o.nodeFlows[name] = f
	o.emit(Change{Type: KindNodeFlow, Op: OpUpsert, Key: name, Data: f})
}
