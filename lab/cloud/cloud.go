package cloud

import (
	"cmp"
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/pubsub"
)

// Cloud is one simulated cloud account in one region. Create it with New.
type Cloud struct {
	cfg   Config
	clock clock.WithTicker

	// mu guards the resources below. Fault checks, step mode, the call log
	// and subscribers each have their own lock so that reading the log or
	// sleeping for latency never blocks a mutation.
	mu        sync.RWMutex
	trans     transitions // instances' state transitions under way (instances.go)
	net       *network
	instances map[string]*instanceRec
	byDNS     map[string]string // private DNS name -> instance ID
	instSeq   uint64            // launch order, for stable listings
	nextZone  int               // round-robin placement cursor
	lbs       map[string]*LoadBalancer
	routes    map[netip.Prefix]*Route
	aws       *awsState // the AWS model (aws*.go)

	// views caches a frozen copy of each load balancer for
	// LoadBalancerViews; a change to one drops its copy (see dropView).
	// Filled under mu.RLock, so it has a lock of its own.
	viewMu sync.Mutex
	views  map[string]*LoadBalancer
	// awsViews does the same for the AWS model's Classic ELBs (by name);
	// an instance's state is in every view that targets it, so a state
	// change drops them all (dropAWSViews).
	awsViews map[string]*LoadBalancer

	faults faultState
	step   stepState
	log    *callLog
	// methods says which cloudprovider.Interface method each caller of
	// the AWS API is in (the upstream provider's calls carry no context).
	methods MethodTracker
	hub     pubsub.Broadcaster[Event]
	store   *store // nil when memory-only
}

// New builds a Cloud from cfg, applying defaults, and loads cfg.StatePath
// when that file exists.
func New(cfg Config) (*Cloud, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cloud{
		cfg:       cfg,
		clock:     cfg.Clock,
		net:       newNetwork(&cfg),
		instances: map[string]*instanceRec{},
		byDNS:     map[string]string{},
		lbs:       map[string]*LoadBalancer{},
		routes:    map[netip.Prefix]*Route{},
		aws:       newAWSState(),
	}
	c.faults.f = cloneFaults(Faults{})
	var lastSeq uint64
	if cfg.StatePath != "" {
		seq, err := c.load(cfg.StatePath)
		if err != nil {
			return nil, err
		}
		lastSeq = seq
	}
	if c.aws.net.VPCID == "" {
		c.initAWSNetwork()
	}
	c.log = newCallLog(cfg.CallLogSize, lastSeq)
	if cfg.StatePath != "" {
		c.store = newStore(cfg.StatePath, cfg.Files)
		go c.flushLoop()
	}
	return c, nil
}

// Close releases any calls held in step mode, stops background persistence
// and writes the state one last time. The Cloud keeps answering calls after
// Close, but nothing more is persisted.
func (c *Cloud) Close() error {
	c.SetStepMode(false)
	c.trans.stop()
	if c.store == nil {
		return nil
	}
	if !c.store.stop() {
		return nil // already closed
	}
	return c.Flush()
}

// Config returns the effective configuration, defaults applied.
func (c *Cloud) Config() Config {
	cfg := c.cfg
	cfg.Zones = slices.Clone(cfg.Zones)
	return cfg
}

// now is the time stamped on resources: UTC like AWS, and without the
// monotonic reading so a resource compares equal to itself after a save and
// reload.
func (c *Cloud) now() time.Time { return c.clock.Now().Round(0).UTC() }

type callerKey struct{}

// WithCaller records who is calling ("service-controller", "node-controller",
// "kubelet", "user", ...) so the call log and IAM errors can name them.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the caller set by WithCaller, or "" if none was set.
// The call log shows a missing caller as "unknown".
func CallerFrom(ctx context.Context) string {
	s, _ := ctx.Value(callerKey{}).(string)
	return s
}

const unknownCaller = "unknown"

// CallerUser is the caller of the lab's own API on a student's behalf: the
// page's cloud panel and POST /api/cloud/... An instance it launched is
// the student's (Instance.LaunchedBy), which an exercise's reset takes
// back.
const CallerUser = "user"

type methodKey struct{}

// WithMethod records which cloudprovider.Interface method a call serves
// ("InstancesV2.InstanceMetadata", "Routes.CreateRoute", ...), so the
// call log shows the interface behind the API calls.
func WithMethod(ctx context.Context, method string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, methodKey{}, method)
}

// MethodFrom returns the method set by WithMethod, or "".
func MethodFrom(ctx context.Context) string {
	s, _ := ctx.Value(methodKey{}).(string)
	return s
}

// emitFunc lets an operation announce which resource it changed. Emitting
// also marks the state dirty for persistence, so "changed" has one meaning.
type emitFunc func(kind, id string)

// call is the pipeline every API call runs through; see the package comment
// for the order of steps. fn validates, then mutates under c.mu, and returns
// a one-line result summary. No lock is held while a call waits.
func (c *Cloud) call(ctx context.Context, action, request string, resources []string, fn func(emit emitFunc) (string, error)) error {
	caller := CallerFrom(ctx)
	if caller == "" {
		caller = unknownCaller
	}
	service := ServiceFrom(ctx)
	call, h := c.beginCall(Call{Time: c.clock.Now().UTC(), Service: service, Action: action, Caller: caller, Method: MethodFrom(ctx), Request: request, Resources: resources, State: CallRunning})
	c.publishCall(call)

	var events []Event
	err := c.await(ctx, &call, h)
	if err == nil {
		var consumed bool
		consumed, err = c.admit(action, caller, service)
		if consumed {
			c.publish(Event{Kind: EventFaults})
			c.markDirty() // FailNext's counts are saved state
		}
	}
	if err == nil {
		call.Result, err = fn(func(kind, id string) {
			switch kind {
			case EventLoadBalancer:
				c.dropView(id)
			case EventELB:
				c.dropAWSView(id) // an ARN names no Classic ELB: NLB views are not cached
			}
			events = append(events, Event{Kind: kind, ID: id})
		})
	}

	call.State = CallDone
	call.Duration = c.clock.Since(call.Time)
	if err != nil {
		call.Result = ""
		var e *Error
		if errors.As(err, &e) {
			if e.Action == "" {
				e.Action = action
			}
			call.ErrorCode = e.Code
		}
		call.Error = err.Error()
	}
	c.log.put(call)
	if len(events) > 0 {
		c.markDirty()
		for _, ev := range events {
			c.publish(ev)
		}
	}
	c.publishCall(call)
	return err
}

// await holds the call in step mode, then sleeps for injected latency; both
// give up when ctx ends, and a call that gave up changes nothing.
func (c *Cloud) await(ctx context.Context, call *Call, h *hold) error {
	if h != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			c.unhold(h)
			return canceled(ctx)
		}
		call.State = CallRunning
		c.log.put(*call)
		c.publishCall(*call)
	}
	if d := c.latency(); d > 0 {
		t := c.clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return canceled(ctx)
		}
	}
	if ctx.Err() != nil {
		return canceled(ctx)
	}
	return nil
}

func canceled(ctx context.Context) error {
	return &Error{Code: ErrCanceled, Message: "request canceled: " + context.Cause(ctx).Error(), cause: ctx.Err()}
}

// Event kinds.
const (
	EventCall         = "call"
	EventInstance     = "instance"
	EventLoadBalancer = "loadbalancer"
	EventRoute        = "route"
	EventFaults       = "faults"
	EventStepMode     = "stepmode"
)

// Event tells a subscriber that something changed. Events carry no resource
// state: a subscriber reads what it needs with Snapshot or a Describe call.
type Event struct {
	// Seq numbers every event published by this Cloud, without gaps. A gap
	// seen by a subscriber means its channel was full and it missed events;
	// it should resynchronise from Snapshot and Calls.
	Seq uint64 `json:"seq"`
	// Call is set for Kind "call": a call started, was released from step
	// mode, or finished (see Call.State). Treat it as read-only.
	Call *Call  `json:"call,omitempty"`
	Kind string `json:"kind"`
	// ID names the changed resource: instance ID, load balancer name or
	// route destination CIDR. Empty for faults and step mode.
	ID string `json:"id,omitempty"`
}

// publish numbers e and hands it to every subscriber with room for it; it
// never waits, so a slow subscriber cannot stall the cloud.
func (c *Cloud) publish(e Event) {
	c.hub.PublishSeq(func(seq uint64) Event {
		e.Seq = seq
		return e
	})
}

func (c *Cloud) publishCall(call Call) {
	c.publish(Event{Kind: EventCall, Call: &call})
}

// Subscribe returns a channel of events with room for buf of them (at least
// 1) and a cancel func that unsubscribes and closes the channel; cancel may
// be called more than once. Delivery never blocks the cloud: when the
// channel is full the event is dropped for this subscriber only, which it
// can detect as a gap in Event.Seq.
func (c *Cloud) Subscribe(buf int) (<-chan Event, func()) {
	return c.hub.Subscribe(buf)
}

// Instances returns a copy of every instance in launch order: what the
// kubelets need of the cloud, without Snapshot's copy of every load
// balancer target (a million of them at 1,000 nodes x 1,000 Services).
func (c *Cloud) Instances() []Instance {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.instancesLocked()
}

// Routes returns a copy of the route table, sorted by destination.
func (c *Cloud) Routes() []Route {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.routesLocked()
}

// LoadBalancerViews returns every load balancer, the lab's own (Kind "")
// and the AWS model's Classic ELBs and NLBs (aws_views.go) in one list,
// sorted by name and then kind, as shared read-only values: one that has
// not changed since an earlier call is the very same *LoadBalancer as
// then, so a reader that refreshes on every change (the data plane)
// copies only what changed instead of every target of every load
// balancer. Callers must not modify what they get.
func (c *Cloud) LoadBalancerViews() []*LoadBalancer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.viewMu.Lock()
	defer c.viewMu.Unlock()
	out := make([]*LoadBalancer, 0, len(c.lbs)+len(c.aws.elbs)+len(c.aws.nlbs))
	out = c.ownViewsLocked(out)
	out = c.awsViewsLocked(out)
	slices.SortFunc(out, func(a, b *LoadBalancer) int { return compareLBs(*a, *b) })
	return out
}

// compareLBs orders the one list of load balancers: by name, then kind
// (the lab's own first), so two providers' load balancers of one name
// keep a stable order.
func compareLBs(a, b LoadBalancer) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind))
}

// ownViewsLocked appends the cached views of the lab's own load
// balancers, building those that changed. Called with mu read-locked and
// viewMu held.
func (c *Cloud) ownViewsLocked(out []*LoadBalancer) []*LoadBalancer {
	if c.views == nil {
		c.views = map[string]*LoadBalancer{}
	}
	for n, lb := range c.lbs {
		v := c.views[n]
		if v == nil {
			cp := lb.clone()
			v = &cp
			c.views[n] = v
		}
		out = append(out, v)
	}
	if len(c.views) > len(c.lbs) { // drop the views of deleted ones
		for n := range c.views {
			if _, ok := c.lbs[n]; !ok {
				delete(c.views, n)
			}
		}
	}
	return out
}

// dropView forgets the cached view of a load balancer that changed. Called
// with mu held for writing (from an operation's emit) or right after the
// change.
func (c *Cloud) dropView(name string) {
	c.viewMu.Lock()
	delete(c.views, name)
	c.viewMu.Unlock()
}

// dropAWSView forgets the cached view of the Classic ELB named name. Like
// dropView it is called after the change, so a view built before the
// change (under mu.RLock, which the change excludes) cannot outlive it.
func (c *Cloud) dropAWSView(name string) {
	c.viewMu.Lock()
	delete(c.awsViews, name)
	c.viewMu.Unlock()
}

// dropAWSViews forgets every cached Classic ELB view: an instance that
// stopped, started or went away changes its target in each of them.
func (c *Cloud) dropAWSViews() {
	c.viewMu.Lock()
	clear(c.awsViews)
	c.viewMu.Unlock()
}

// State is a point-in-time copy of every resource, for the UI.
type State struct {
	Instances     []Instance     `json:"instances"`     // launch order
	LoadBalancers []LoadBalancer `json:"loadBalancers"` // by name, then kind: the lab's own and the AWS model's
	Routes        []Route        `json:"routes"`        // by destination
}

// Snapshot returns a deep copy of all resources, sorted deterministically;
// its load balancers are the one list of LoadBalancerViews (both
// providers'), copied.
// It copies every target of every load balancer, so with 1,000 nodes and
// 1,000 load balancers prefer Describe calls for targeted reads.
func (c *Cloud) Snapshot() State {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return State{
		Instances:     c.instancesLocked(),
		LoadBalancers: c.allLoadBalancersLocked(),
		Routes:        c.routesLocked(),
	}
}
