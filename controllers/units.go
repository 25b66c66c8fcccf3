package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	nodelifecyclecontroller "k8s.io/cloud-provider/controllers/nodelifecycle"
	routecontroller "k8s.io/cloud-provider/controllers/route"
	servicecontroller "k8s.io/cloud-provider/controllers/service"

	// The Route controller asks utilfeature.DefaultFeatureGate about
	// controller-manager features, which panics for unregistered ones;
	// Kubernetes' feature list registers them. The lab links it anyway.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// unit is one running instance of one controller: its own context, client
// (behind a gate), informer factory and goroutine.
type unit struct {
	name    string
	cancel  context.CancelFunc
	done    chan struct{} // closed when the controller's Run returns
	factory informers.SharedInformerFactory
	gate    *gate
	started time.Time
	proc    *Process // the CCM process it belongs to; nil: in-process
}

// start builds and starts a fresh instance. Called with m.mu held and Run
// active.
func (m *Manager) start(name string) error { return m.startIn(m.runCtx, name, nil) }

// startIn starts an instance that runs until ctx ends, as part of CCM
// process p (nil: the manager's own, in-process CCM). Called with m.mu held.
func (m *Manager) startIn(parent context.Context, name string, p *Process) error {
	if g := m.draining[name]; g != nil {
		// A real CCM gets this from leader election: one active instance.
		if !g.close(m.cfg.Tuning.StopTimeout) {
			return fmt.Errorf("%w: the previous %s controller still has requests in flight; try again", ErrBusy, name)
		}
		delete(m.draining, name)
	}
	t0 := time.Now()
	u := &unit{name: name, done: make(chan struct{}), gate: &gate{}, started: t0, proc: p}
	ctx, cancel := context.WithCancel(parent)
	u.cancel = cancel
	client, err := m.clientFor(name, u.gate, false, p)
	if err != nil {
		cancel()
		return fmt.Errorf("starting %s controller: %w", name, err)
	}
	prov := m.provider.For(Caller(name)).Bind(ctx, u.gate)
	if name == profile.Service {
		// The Service check before each LB creation is the lab's addition,
		// not a request a real CCM makes; it gets a client outside the
		// instance's rate limit so the controller's own requests keep their
		// real budget.
		checks, err := m.clientFor(name, u.gate, true, p)
		if err != nil {
			cancel()
			return fmt.Errorf("starting %s controller: %w", name, err)
		}
		prov = prov.WithServices(checks.CoreV1())
	}
	resync := m.cfg.Tuning.InformerResync
	if p != nil {
		resync = p.tuning.InformerResync // --min-resync-period
	}
	u.factory = informers.NewSharedInformerFactory(client, resync)
	var cp cloudprovider.Interface = prov
	if m.cfg.Upstream != nil {
		if cp, err = m.cfg.Upstream(Caller(name), client, u.factory, ctx.Done()); err != nil {
			cancel()
			u.factory.Shutdown()
			return fmt.Errorf("starting %s controller: %w", name, err)
		}
	}
	run, err := m.build(name, client, u.factory, cp, p)
	if err != nil {
		cancel()
		u.factory.Shutdown()
		return fmt.Errorf("starting %s controller: %w", name, err)
	}
	u.factory.Start(ctx.Done())
	go func() {
		defer close(u.done)
		run(ctx)
	}()
	m.units[name] = u
	m.log.Debug("controller started", "controller", name, "took", time.Since(t0))
	return nil
}

// stopUnit cancels an instance and waits for it to be gone for good. It
// reports false when requests of the instance were still in flight after
// StopTimeout.
func (m *Manager) stopUnit(u *unit) bool {
	t0 := time.Now()
	timeout := m.cfg.Tuning.StopTimeout
	u.cancel()
	if !waitFor(u.done, timeout) {
		m.log.Warn("controller did not return in time; continuing", "controller", u.name, "timeout", timeout)
	}
	shut := make(chan struct{})
	go func() {
		u.factory.Shutdown()
		close(shut)
	}()
	if !waitFor(shut, timeout) {
		m.log.Warn("informers did not stop in time; continuing", "controller", u.name, "timeout", timeout)
	}
	if !u.gate.close(timeout) {
		m.log.Warn("requests still in flight after switch-off; the next instance waits for them", "controller", u.name, "timeout", timeout)
		return false
	}
	m.log.Debug("controller stopped", "controller", u.name, "took", time.Since(t0), "ran", time.Since(u.started))
	return true
}

func waitFor(ch <-chan struct{}, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// FieldManager is how the apiserver names every CCM controller's writes
// on the AWS-shaped profiles (ccmnames.FieldManagerFor).
const FieldManager = ccmnames.FieldManager

// clientFor builds the instance's own client, its requests passing through
// g; unlimited skips the client-side rate limit. Without a RestConfig the
// shared Client is used and only cloud calls are gated.
func (m *Manager) clientFor(name string, g *gate, unlimited bool, p *Process) (kubernetes.Interface, error) {
	base := m.cfg.RestConfig
	if p != nil {
		// The process's credentials: its ServiceAccount's, or with
		// --use-service-account-credentials the controller's own.
		var err error
		if base, err = p.clientConfig(name); err != nil {
			return nil, err
		}
	}
	if base == nil {
		return m.cfg.Client, nil
	}
	rc := rest.CopyConfig(base)
	rc.UserAgent = ccmnames.FieldManagerFor(m.cfg.Profile.ProviderName) + "/" + name
	if rc.QPS == 0 {
		rc.QPS = m.cfg.Tuning.ClientQPS
	}
	if rc.Burst == 0 {
		rc.Burst = m.cfg.Tuning.ClientBurst
	}
	if p != nil {
		// --kube-api-qps, --kube-api-burst and --kube-api-content-type, when
		// the CCM's command line gave them (held to their ranges by
		// ParseArgs).
		rc.QPS = cmp.Or(p.Args.KubeAPIQPS, rc.QPS)
		rc.Burst = cmp.Or(p.Args.KubeAPIBurst, rc.Burst)
		rc.ContentType = cmp.Or(p.Args.KubeAPIContentType, rc.ContentType)
	}
	if unlimited {
		rc.QPS, rc.RateLimiter = -1, nil
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &gatedTransport{g: g, next: rt} })
	return kubernetes.NewForConfig(rc)
}

// build constructs the named controller on factory's informers and returns
// its blocking run function.
func (m *Manager) build(name string, client kubernetes.Interface, factory informers.SharedInformerFactory, p cloudprovider.Interface, proc *Process) (func(context.Context), error) {
	t, cidrs, clusterName := m.cfg.Tuning, m.cidrs, m.cfg.ClusterName
	if proc != nil {
		t, cidrs, clusterName = proc.tuning, proc.cidrs, proc.Args.ClusterName
	}
	nodes := factory.Core().V1().Nodes()
	switch name {
	case profile.Node:
		c, err := nodecontroller.NewCloudNodeController(nodes, client, p, t.NodeStatusUpdateFrequency, int32(t.NodeWorkers), int32(t.NodeStatusWorkers))
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { c.RunWithContext(ctx, m.metrics) }, nil

	case profile.NodeLifecycle:
		c, err := nodelifecyclecontroller.NewCloudNodeLifecycleController(nodes, client, p, t.NodeMonitorPeriod, t.NodeLifecycleWorkers)
		if err != nil {
			return nil, err
		}
		synced := nodes.Informer().HasSynced
		return func(ctx context.Context) {
			// Upstream Run does not wait for the cache; without this the
			// first pass would see no nodes.
			if !cache.WaitForCacheSync(ctx.Done(), synced) {
				return
			}
			c.Run(ctx, m.metrics)
		}, nil

	case profile.Route:
		routes, ok := p.Routes()
		if !ok {
			return nil, errors.New("the cloud provider has no routes in this profile")
		}
		c, err := routecontroller.New(routes, client, nodes, clusterName, cidrs)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { c.Run(ctx, t.RouteReconcilePeriod, m.metrics) }, nil

	case profile.Service:
		c, err := servicecontroller.New(p, client, factory.Core().V1().Services(), skipInitialNodeAdds{nodes}, clusterName, utilfeature.DefaultFeatureGate)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { c.Run(ctx, t.ServiceWorkers, m.metrics) }, nil

	}
	return nil, fmt.Errorf("%w %q", ErrUnknownController, name)
}

// skipInitialNodeAdds is the node informer as the Service controller sees
// it, minus the Add events of the informer's initial list.
//
// Why: upstream (k8s.io/cloud-provider v0.37.2, controllers/service/
// controller.go) writes cachedService.state in a service worker (line 339)
// without the lock under which its node worker reads it (allServices, line
// 503). On every start the initial node Adds send the node worker through
// allServices while the service workers fill the cache: a data race the race
// detector reports. That startup node sync is redundant (every Service is
// ensured with the full node list as it is cached, and lastSyncedNodes is
// recorded then), so the lab drops it. Node changes after start, resyncs and
// deletions reach the controller unchanged.
type skipInitialNodeAdds struct{ coreinformers.NodeInformer }

func (s skipInitialNodeAdds) Informer() cache.SharedIndexInformer {
	return skipInitialAddsInformer{s.NodeInformer.Informer()}
}

type skipInitialAddsInformer struct{ cache.SharedIndexInformer }

func (i skipInitialAddsInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(skipInitialAdds{h})
}

func (i skipInitialAddsInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, d time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(skipInitialAdds{h}, d)
}

func (i skipInitialAddsInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(skipInitialAdds{h}, o)
}

type skipInitialAdds struct{ cache.ResourceEventHandler }

func (h skipInitialAdds) OnAdd(obj any, isInInitialList bool) {
	if !isInInitialList {
		h.ResourceEventHandler.OnAdd(obj, isInInitialList)
	}
}
