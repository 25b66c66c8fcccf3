package world

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Config says what the world runs against. Cloud, Client, RestConfig and
// Profile are required.
type Config struct {
	Cloud   *cloud.Cloud
	Profile profile.Profile
	// Client serves the data plane and the flow observer.
	Client kubernetes.Interface
	// KubeletClient serves the kubelets (default Client). The binary gives
	// them one without client-side rate limiting: 1,000 nodes renewing
	// Leases would otherwise queue behind the limit and go NotReady.
	KubeletClient kubernetes.Interface
	// RestConfig is what each CCM controller instance builds its own
	// client from.
	RestConfig *rest.Config

	// Controllers enabled at start, as profile.ParseControllers returns
	// them (nil: none), and add-ons, as in controllers.Config.
	Controllers []string
	Addons      []string
	ClusterCIDR string
	Tuning      controllers.Tuning

	// OnChange receives every flow change (optional).
	OnChange func(flow.Change)
	// OnTrace receives every data-plane trace after the observer has seen
	// it (optional).
	OnTrace func(dataplane.Trace)
	// OnSwitch receives the controllers' status after every switch, once
	// the observer has re-derived the flows (optional).
	OnSwitch func(status map[string]bool)

	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.KubeletClient == nil {
		c.KubeletClient = c.Client
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Cloud == nil:
		return errors.New("world: Cloud is required")
	case c.Client == nil:
		return errors.New("world: Client is required")
	case c.RestConfig == nil:
		return errors.New("world: RestConfig is required")
	case c.Profile.Name == "":
		return errors.New("world: Profile is required")
	}
	return nil
}

// World is the assembled world. Its parts are exported for the binary and
// tests to use directly; Run runs them all.
type World struct {
	Cloud     *cloud.Cloud
	Kubelets  *kubelet.Manager
	Manager   *controllers.Manager
	Dataplane *dataplane.Dataplane
	Observer  *flow.Observer

	cfg Config
}

// New builds the world; nothing runs until Run.
func New(cfg Config) (*World, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &World{Cloud: cfg.Cloud, cfg: cfg}
	var err error
	if w.Kubelets, err = kubelet.New(kubelet.Config{Client: cfg.KubeletClient, Cloud: cfg.Cloud, Profile: cfg.Profile, Logger: cfg.Logger.With("component", "kubelet")}); err != nil {
		return nil, err
	}
	if w.Manager, err = controllers.NewManager(controllers.Config{
		RestConfig: cfg.RestConfig, Cloud: cfg.Cloud, Profile: cfg.Profile, ClusterCIDR: cfg.ClusterCIDR,
		Enabled: cfg.Controllers, Addons: cfg.Addons, Tuning: cfg.Tuning, Logger: cfg.Logger,
	}); err != nil {
		return nil, err
	}
	if w.Dataplane, err = dataplane.New(dataplane.Config{Client: cfg.Client, Cloud: cfg.Cloud, Profile: cfg.Profile, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if w.Observer, err = flow.New(flow.Config{
		Client: cfg.Client, Cloud: cfg.Cloud, Controllers: w.Manager.Status,
		OnChange: cfg.OnChange, Logger: cfg.Logger.With("component", "flow"),
	}); err != nil {
		return nil, err
	}
	return w, nil
}

// Run runs every part and the wiring between them until ctx ends or a part
// fails; it returns the first failure.
func (w *World) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				once.Do(func() { first = fmt.Errorf("%s: %w", name, err) })
				cancel()
			}
		})
	}
	run("kubelets", w.Kubelets.Run)
	run("cloud-controller-manager", w.Manager.Run)
	run("dataplane", w.Dataplane.Run)
	run("flow", w.Observer.Run)
	run("controller switches", w.followSwitches)
	run("traces", w.followTraces)
	wg.Wait()
	return first
}

// followSwitches re-derives the flows when a controller is switched: what
// is stuck, and why, depends on which controllers run.
func (w *World) followSwitches(ctx context.Context) error {
	ch, stop := w.Manager.Subscribe(64)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-ch:
			if !ok {
				return nil
			}
			w.Observer.ControllersChanged()
			if w.cfg.OnSwitch != nil {
				w.cfg.OnSwitch(w.Manager.Status())
			}
		}
	}
}

// followTraces hands every request trace to the observer: step 6.
func (w *World) followTraces(ctx context.Context) error {
	ch, stop := w.Dataplane.SubscribeTraces(256)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case t, ok := <-ch:
			if !ok {
				return nil
			}
			w.Observer.ObserveTrace(flow.TraceInfo{ID: t.ID, LB: t.LB, Service: t.Service, Status: t.Status, Time: t.Time})
			if w.cfg.OnTrace != nil {
				w.cfg.OnTrace(t)
			}
		}
	}
}

// WaitForSync waits until the kubelets, the data plane and the observer
// have their caches, so what they report reflects the cluster.
func (w *World) WaitForSync(ctx context.Context) error {
	for _, s := range []interface{ WaitForSync(context.Context) error }{w.Kubelets, w.Dataplane, w.Observer} {
		if err := s.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}
