package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
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
	// HealthCheckInterval is how often the health checker looks for
	// targets whose check is due, and the cloud is resynchronised from a
	// full snapshot every second round. Default 1s: each target is
	// checked at its own load balancer's interval (healthcheck.go), to
	// this resolution.
	HealthCheckInterval time.Duration
	// HealthCheckTimeScale divides the intervals and timeouts of every
	// load balancer's health check: with the default 10, a Classic ELB
	// checked every 10 s is checked every second here, and an NLB's 3
	// failures 30 s apart take 9 s instead of 90 s. 1 runs AWS's times;
	// at most 100. The page says the factor where it draws health.
	HealthCheckTimeScale int
	// TraceBuffer is how many traces Traces keeps. Default 500.
	TraceBuffer int
	Clock       clock.WithTicker // default clock.RealClock{}
	Logger      *slog.Logger     // default: discard
	// OnDeliver hears every request delivered to a Pod (accesslog.go);
	// optional, called on the request's goroutine, must not block.
	OnDeliver func(Delivery)
	// Serve answers a request that reached a Pod as the Pod's processes
	// do (lab/podruntime); optional, called on the request's goroutine.
	// ErrNotListening refuses the connection; ErrNotServed (or no Serve)
	// lets the data plane answer for the Pod itself (pod.go), and only
	// then is OnDeliver called: a process writes its own access log.
	Serve func(ServeRequest) (ServeResult, error)
	// DNS says where Pods' DNS queries go (dns.go); the zero value: the
	// data plane answers them itself.
	DNS DNSConfig
	// DroppedHold is how long a listener of an AWS load balancer holds a
	// connection whose packets the network dropped (a security group, a
	// node that is down) before it resets it: the client sees a timeout,
	// as on AWS, unless it gives up first. Default 10s, at most 10m; at
	// most maxHeldConns are held at once.
	DroppedHold time.Duration
	// ListenHost is the address load balancer listeners bind to, each on a
	// free port. Default 127.0.0.1: the listeners are for the student's own
	// machine.
	ListenHost string
}

const (
	defaultDroppedHold          = 10 * time.Second
	maxDroppedHold              = 10 * time.Minute
	maxHeldConns                = 64
	defaultHealthCheckInterval  = time.Second
	defaultHealthCheckTimeScale = 10
	maxHealthCheckTimeScale     = 100
	defaultTraceBuffer          = 500
	defaultListenHost           = "127.0.0.1"
	// defaultClientIP is the client of simulated requests (TEST-NET-3).
	defaultClientIP = "203.0.113.10"
	// TraceHeader carries the trace ID on every answer from a listener.
	TraceHeader = "X-Ccmlab-Trace"
)

func (c *Config) setDefaults() {
	c.HealthCheckInterval = cmp.Or(c.HealthCheckInterval, defaultHealthCheckInterval)
	c.HealthCheckTimeScale = cmp.Or(c.HealthCheckTimeScale, defaultHealthCheckTimeScale)
	c.DroppedHold = cmp.Or(c.DroppedHold, defaultDroppedHold)
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
	if c.HealthCheckTimeScale < 1 || c.HealthCheckTimeScale > maxHealthCheckTimeScale {
		errs = append(errs, fmt.Errorf("health check time scale %d must be 1 to %d", c.HealthCheckTimeScale, maxHealthCheckTimeScale))
	}
	if c.DroppedHold < 0 || c.DroppedHold > maxDroppedHold {
		errs = append(errs, fmt.Errorf("dropped-connection hold %s must be 0 to %s", c.DroppedHold, maxDroppedHold))
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
	affinity  *affinityTable
	traces    *traceLog

	lmu       sync.Mutex
	listeners map[listenerKey]*lbListener
	refused   map[listenerKey]bool // past the cap (listeners.go)
	held      chan struct{}        // dropped connections being held (failL4)
	closed    bool
	serving   sync.WaitGroup

	hcOnce sync.Once
	hc     *healthChecker

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
		affinity:  newAffinityTable(cfg.Clock),
		traces:    newTraceLog(cfg.TraceBuffer),
		listeners: map[listenerKey]*lbListener{},
		held:      make(chan struct{}, maxHeldConns),
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
	rounds := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			// The periodic snapshot also repairs anything a dropped event
			// left behind.
			rounds++
			cv := d.cloudView.Load()
			if rounds%2 == 0 {
				cv = d.syncCloud()
			}
			d.checkHealth(cv)
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
	// Every load balancer (the lab's own and the AWS model's Classic ELBs
	// and NLBs, one list), with the security groups the AWS ones are
	// checked against.
	cv := indexCloud(c.LoadBalancerViews(), c.Instances(), c.Routes(), d.vpc)
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

func (d *Dataplane) env() *env { return d.envFor(d.cloudView.Load()) }

func (d *Dataplane) envFor(cv *cloudView) *env {
	return &env{cluster: d.view, cloud: cv, overlay: d.overlay, pick: d.rr.pick, affinity: d.affinity}
}

// HealthCheckTimeScale is the factor health-check times are divided by
// (Config.HealthCheckTimeScale), for the page.
func (d *Dataplane) HealthCheckTimeScale() int {
	return cmp.Or(d.cfg.HealthCheckTimeScale, defaultHealthCheckTimeScale)
}
