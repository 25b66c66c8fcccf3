package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/internal/pubsub"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// AddonLBC is the name of the lbc add-on (the AWS Load Balancer Controller,
// package awslbc, which the lab runs as a Deployment: Config.AddonSwitch)
// in Config.Addons, Status and Enable/Disable.
const AddonLBC = ccmnames.AddonLBC

// Errors of Enable and Disable, for the server to map to HTTP statuses.
var (
	// ErrUnknownController: no controller of that name exists at all (404).
	ErrUnknownController = errors.New("unknown controller")
	// ErrNotInProfile: the controller exists but this lab's profile (or
	// add-on list) does not have it, e.g. "service" in kubevirt (409).
	ErrNotInProfile = errors.New("controller not available in this profile")
	// ErrStopped: the manager's Run has returned.
	ErrStopped = errors.New("controller manager has stopped")
	// ErrBusy: the previous instance of the controller still has requests
	// in flight, so a new one may not start yet (503, retry).
	ErrBusy = errors.New("controller busy")
)

// Config says what the manager runs and against what.
type Config struct {
	// RestConfig is used to build a separate client for every controller
	// instance, which is what lets Disable cut an instance off the apiserver
	// completely. Client is used instead when RestConfig is nil.
	RestConfig *rest.Config
	Client     kubernetes.Interface
	Cloud      *cloud.Cloud
	Profile    profile.Profile
	// ClusterName tags load balancers; default "ccmlab".
	ClusterName string
	// ClusterCIDR is the Pod network (comma-separated for dual stack) the
	// Route controller is responsible for; default "10.244.0.0/14", the
	// embedded control plane's. It must match the controller-manager's
	// --cluster-cidr: upstream's Route controller creates a route for every
	// podCIDR but deletes only those inside this network.
	ClusterCIDR string
	// Enabled are the controllers on at start, as profile.ParseControllers
	// returns them. Add-ons in Addons are on at start as well.
	Enabled []string
	// Addons lists add-ons installed in this lab; "lbc" is the only one.
	// An add-on is no controller of this manager: it runs in the cluster
	// (the lbc add-on is the AWS Load Balancer Controller's Deployment),
	// AddonSwitch switches it and SetAddon reports what the cluster says
	// of it. Addons therefore need AddonSwitch.
	Addons []string
	Logger *slog.Logger // default: discard
	Clock  clock.Clock  // stamps StatusChange; default real time
	Tuning Tuning
	// Upstream, when set, builds the cloud provider of each controller
	// instance instead of the lab's own (package provider): the upstream
	// AWS provider talking to the lab's AWS API (package upstreamaws).
	// caller names the instance in the call log; client and factory are
	// the instance's own, stop ends with it.
	Upstream func(caller string, client kubernetes.Interface, factory informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error)
	// AddonSwitch switches an add-on of Addons on or off in the cluster,
	// as an operator would (the lbc add-on: its Deployment scaled to 1 or
	// 0), and returns once the cluster runs it so or ctx ends. The
	// add-on's state in Status is not set by the switch but by SetAddon,
	// from what the cluster says, so that it is the same after a restart
	// and after a student's kubectl scale.
	AddonSwitch func(ctx context.Context, addon string, on bool) error

	// Switch, when set, makes the manager hosted (process.go): the CCM
	// controllers run only inside CCM processes (RunProcess, one per run
	// of the CCM Pod's container), and Enable/Disable call Switch to have
	// the CCM's arguments changed (the lab patches its DaemonSet), then
	// wait until a process runs with them. Enabled then only says what the
	// first CCM is given.
	Switch func(ctx context.Context, controller string, on bool) error
}

// Tuning holds the timings and sizes the upstream controllers let a CCM
// choose. Zero fields take the lab defaults documented on each, which are
// much shorter than upstream's so that flows show within seconds.
type Tuning struct {
	// NodeStatusUpdateFrequency: how often the Node controller refreshes
	// addresses of initialized nodes (upstream 5m). Default 5s.
	NodeStatusUpdateFrequency time.Duration
	// NodeMonitorPeriod: how often the node-lifecycle controller checks
	// not-ready nodes against the cloud (upstream 5s). Default 2s.
	NodeMonitorPeriod time.Duration
	// RouteReconcilePeriod: the Route controller's sync period
	// (upstream 10s). Default 5s.
	RouteReconcilePeriod time.Duration
	// InformerResync: default resync of every controller's informers
	// (upstream 12-24h). The Service controller's own 30s/100s handler
	// resyncs are constants upstream and unaffected. Default 10s.
	InformerResync time.Duration
	// Worker counts. Defaults: node 8 (upstream's ConcurrentNodeSyncs,
	// default 1: nodes are initialized one at a time, about 12 per second
	// here; 8 initialize 1,000 launched at once at over 100 per second),
	// node status 4, node lifecycle 4, service 4 (upstream 1).
	NodeWorkers, NodeStatusWorkers, NodeLifecycleWorkers, ServiceWorkers int
	// ClientQPS and ClientBurst apply to each controller's client when
	// RestConfig leaves them zero (client-go would use 5 and 10, which would
	// throttle 1,000 Services for minutes). Defaults 200 and 400.
	ClientQPS   float32
	ClientBurst int
	// StopTimeout bounds each wait when switching a controller off: for its
	// Run to return, for its informers to stop, and for its requests in
	// flight to finish. Default 10s.
	StopTimeout time.Duration
	// SwitchTimeout bounds a hosted manager's wait for a CCM process that
	// runs with a switch applied (a DaemonSet rollout). Default 2m.
	SwitchTimeout time.Duration
}

func (t *Tuning) setDefaults() {
	t.NodeStatusUpdateFrequency = cmp.Or(t.NodeStatusUpdateFrequency, 5*time.Second)
	t.NodeMonitorPeriod = cmp.Or(t.NodeMonitorPeriod, 2*time.Second)
	t.RouteReconcilePeriod = cmp.Or(t.RouteReconcilePeriod, 5*time.Second)
	t.InformerResync = cmp.Or(t.InformerResync, 10*time.Second)
	t.NodeWorkers = cmp.Or(t.NodeWorkers, 8)
	t.NodeStatusWorkers = cmp.Or(t.NodeStatusWorkers, 4)
	t.NodeLifecycleWorkers = cmp.Or(t.NodeLifecycleWorkers, 4)
	t.ServiceWorkers = cmp.Or(t.ServiceWorkers, 4)
	t.ClientQPS = cmp.Or(t.ClientQPS, 200)
	t.ClientBurst = cmp.Or(t.ClientBurst, 400)
	t.StopTimeout = cmp.Or(t.StopTimeout, 10*time.Second)
	t.SwitchTimeout = cmp.Or(t.SwitchTimeout, 2*time.Minute)
}

func (c *Config) setDefaults() {
	c.ClusterName = cmp.Or(c.ClusterName, provider.DefaultClusterName)
	c.ClusterCIDR = cmp.Or(c.ClusterCIDR, "10.244.0.0/14")
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	c.Tuning.setDefaults()
}

// validate checks a Config after defaults are applied.
func (c *Config) validate() error {
	var errs []error
	if c.RestConfig == nil && c.Client == nil {
		errs = append(errs, errors.New("a RestConfig or a Client is required"))
	}
	if c.Cloud == nil {
		errs = append(errs, errors.New("a Cloud is required"))
	}
	if c.Profile.Name == "" || c.Profile.ProviderName == "" {
		errs = append(errs, errors.New("a Profile is required (use profile.Get)"))
	}
	if c.Cloud != nil && c.Profile.Name != "" {
		ipMode := c.Cloud.Config().IngressMode == cloud.IngressIP
		if ipMode != c.Profile.IngressIP {
			errs = append(errs, fmt.Errorf("profile %s wants IP ingress=%t but the cloud's ingress mode is %q", c.Profile.Name, c.Profile.IngressIP, c.Cloud.Config().IngressMode))
		}
	}
	if _, err := parseCIDRs(c.ClusterCIDR); err != nil {
		errs = append(errs, err)
	}
	for _, name := range c.Enabled {
		if name == AddonLBC && slices.Contains(c.Addons, AddonLBC) {
			continue
		}
		if !slices.Contains(profile.AllControllers(), name) {
			errs = append(errs, fmt.Errorf("enabled: %w %q", ErrUnknownController, name))
		} else if !c.Profile.Has(name) {
			errs = append(errs, fmt.Errorf("enabled: %q: %w %s", name, ErrNotInProfile, c.Profile.Name))
		}
	}
	for _, a := range c.Addons {
		if a != AddonLBC {
			errs = append(errs, fmt.Errorf("addons: unknown add-on %q (valid: %s)", a, AddonLBC))
		}
	}
	if len(c.Addons) > 0 && c.AddonSwitch == nil {
		errs = append(errs, errors.New("addons: an add-on runs in the cluster and needs AddonSwitch"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("controllers: invalid config: %w", err)
	}
	return nil
}

func parseCIDRs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for part := range strings.SplitSeq(s, ",") {
		_, n, err := net.ParseCIDR(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("cluster CIDR %q: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// StatusChange is one switch of one controller, for the websocket stream.
type StatusChange struct {
	Seq        uint64    `json:"seq"`
	Controller string    `json:"controller"`
	Enabled    bool      `json:"enabled"`
	Time       time.Time `json:"time"`
}

// Manager runs the CCM controllers and switches each on and off while the
// lab runs. All methods are safe for concurrent use; switches are applied
// one at a time in arrival order.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	provider *provider.Provider
	metrics  *controllersmetrics.ControllerManagerMetrics
	names    []string // every controller this lab has, in page order
	cidrs    []*net.IPNet

	// mu serializes Run's start and stop, Enable and Disable. It is held
	// while an instance stops, so a switch waits for the previous one.
	mu      sync.Mutex
	runCtx  context.Context // non-nil while Run is active
	stopped bool
	units   map[string]*unit
	// draining holds a stopped instance whose requests outlived
	// StopTimeout; the next instance of that controller starts only once
	// they have returned, so two instances never act at the same time.
	draining map[string]*gate

	// Hosted (process.go): the process whose controllers run, how many
	// have led, and a condition on mu signalled when that changes.
	// switchMu serializes switches, which wait without holding mu.
	leading  *leader
	gen      uint64
	ready    *sync.Cond
	switchMu sync.Mutex
	// addonMu serializes add-on switches (addons.go).
	addonMu sync.Mutex

	// stMu guards on and leaderID, so Status never waits behind a slow
	// switch.
	stMu     sync.RWMutex
	on       map[string]bool
	leaderID string

	switches pubsub.Broadcaster[StatusChange]
}

// NewManager checks cfg and prepares a manager; nothing runs until Run.
func NewManager(cfg Config) (*Manager, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cidrs, _ := parseCIDRs(cfg.ClusterCIDR)
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "ccm"),
		provider: provider.New(cfg.Cloud, cfg.Profile, cfg.ClusterName),
		metrics:  controllersmetrics.NewControllerManagerMetrics("cloud-controller-manager"),
		cidrs:    cidrs,
		units:    map[string]*unit{},
		draining: map[string]*gate{},
		on:       map[string]bool{},
	}
	m.ready = sync.NewCond(&m.mu)
	for _, n := range profile.AllControllers() {
		if cfg.Profile.Has(n) {
			m.names = append(m.names, n)
			m.on[n] = false
		}
	}
	for _, n := range cfg.Enabled {
		// Hosted, a CCM controller is on only while a process runs it.
		if cfg.Switch == nil || !cfg.Profile.Has(n) {
			m.on[n] = true
		}
	}
	if slices.Contains(cfg.Addons, AddonLBC) {
		// Off until the cluster says otherwise (SetAddon).
		m.names = append(m.names, AddonLBC)
		m.on[AddonLBC] = false
	}
	return m, nil
}

// Provider returns the manager's cloud provider (its calls are logged as
// "unknown"; use For to name a caller).
func (m *Manager) Provider() *provider.Provider { return m.provider }

// Controllers lists the controllers this lab has (profile plus add-ons) in
// the order the page shows them.
func (m *Manager) Controllers() []string { return slices.Clone(m.names) }

// Caller is the name under which controller name's cloud calls appear in
// the call log: "<name>-controller", and "load-balancer-controller" for lbc.
func Caller(name string) string { return ccmnames.Caller(name) }

// Run starts the enabled controllers and keeps the manager live until ctx
// ends; then it switches every controller off and returns nil. It returns
// an error at once if a controller fails to start or Run was called before.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.runCtx != nil || m.stopped {
		m.mu.Unlock()
		return errors.New("controllers: Manager.Run called more than once")
	}
	m.runCtx = ctx
	for _, name := range m.names {
		if !m.isOn(name) || m.hosted(name) || m.addon(name) {
			continue
		}
		if err := m.start(name); err != nil {
			m.shutdownLocked()
			m.mu.Unlock()
			return err
		}
	}
	m.log.Info("cloud-controller-manager running", "profile", m.cfg.Profile.Name, "controllers", m.Status())
	m.mu.Unlock()

	<-ctx.Done()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shutdownLocked()
	m.log.Info("cloud-controller-manager stopped")
	return nil
}

// shutdownLocked stops every instance (in parallel: they are independent)
// and marks the manager stopped.
func (m *Manager) shutdownLocked() {
	var wg sync.WaitGroup
	for _, u := range m.units {
		wg.Go(func() { m.stopUnit(u) })
	}
	wg.Wait()
	clear(m.units)
	m.stopped = true
	m.runCtx = nil
	m.leading = nil
	m.ready.Broadcast()
	for _, name := range m.names {
		if m.isOn(name) {
			m.setOn(name, false)
		}
	}
}

func (m *Manager) check(name string) error {
	if slices.Contains(m.names, name) {
		return nil
	}
	// The messages reach the student as the HTTP error's text, so they say
	// what this lab has rather than only which sentinel matched.
	if slices.Contains(profile.AllControllers(), name) {
		return fmt.Errorf("%w: the %s profile has no %s controller", ErrNotInProfile, m.cfg.Profile.Name, name)
	}
	if name == AddonLBC {
		return fmt.Errorf("%w: the lbc add-on is not installed (start the lab with --addons lbc)", ErrNotInProfile)
	}
	return fmt.Errorf("%w %q (this lab has: %s)", ErrUnknownController, name, strings.Join(slices.Sorted(slices.Values(m.names)), ", "))
}

// Enable switches a controller on, starting a fresh instance of it. It is a
// no-op when the controller is already on. Before Run it only records that
// the controller should start with Run.
func (m *Manager) Enable(name string) error {
	if err := m.check(name); err != nil {
		return err
	}
	if m.addon(name) {
		return m.switchAddon(name, true) // addons.go
	}
	if m.hosted(name) {
		return m.switchHosted(name, true) // process.go
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return ErrStopped
	}
	if m.isOn(name) {
		return nil
	}
	if m.runCtx != nil {
		if err := m.start(name); err != nil {
			return err
		}
	}
	m.setOn(name, true)
	return nil
}

// Disable switches a controller off and returns once its instance has
// stopped: its goroutines returned, its informers shut down and its API
// requests and cloud calls in flight finished (each wait bounded by
// Tuning.StopTimeout). It is a no-op when the controller is already off.
func (m *Manager) Disable(name string) error {
	if err := m.check(name); err != nil {
		return err
	}
	if m.addon(name) {
		return m.switchAddon(name, false) // addons.go
	}
	if m.hosted(name) {
		return m.switchHosted(name, false) // process.go
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.isOn(name) {
		return nil
	}
	if u := m.units[name]; u != nil {
		if !m.stopUnit(u) {
			m.draining[name] = u.gate
		}
		delete(m.units, name)
	}
	m.setOn(name, false)
	return nil
}

// Status maps every controller this lab has (profile plus add-ons) to
// whether it is switched on. While Run is active, on means running; before
// Run it means it will start with Run; after Run everything is off. An
// add-on is on when the cluster says so (SetAddon).
func (m *Manager) Status() map[string]bool {
	m.stMu.RLock()
	defer m.stMu.RUnlock()
	out := make(map[string]bool, len(m.on))
	for k, v := range m.on {
		out[k] = v
	}
	return out
}

func (m *Manager) isOn(name string) bool {
	m.stMu.RLock()
	defer m.stMu.RUnlock()
	return m.on[name]
}

func (m *Manager) setOn(name string, on bool) {
	m.stMu.Lock()
	m.on[name] = on
	m.stMu.Unlock()
	m.publish(name, on)
	m.log.Info("controller switched", "controller", name, "enabled", on)
}

// hosted reports whether name runs in CCM processes rather than in the
// manager itself.
func (m *Manager) hosted(name string) bool {
	return m.cfg.Switch != nil && m.ccmController(name)
}

// Subscribe returns a channel of switches with room for buf of them (at
// least 1) and a cancel func that unsubscribes and closes the channel. A
// full channel misses changes (visible as a gap in Seq); the manager never
// waits for a subscriber.
func (m *Manager) Subscribe(buf int) (<-chan StatusChange, func()) {
	return m.switches.Subscribe(buf)
}

func (m *Manager) publish(name string, on bool) {
	m.switches.PublishSeq(func(seq uint64) StatusChange {
		return StatusChange{Seq: seq, Controller: name, Enabled: on, Time: m.cfg.Clock.Now()}
	})
}
