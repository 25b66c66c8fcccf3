package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/podruntime"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Config says what the simulation runs against. Profile and RestConfig
// are required.
type Config struct {
	Profile profile.Profile
	// RestConfig reaches the cluster. Every part builds its client from it;
	// each CCM controller instance builds its own.
	RestConfig *rest.Config
	// ClusterCIDR is the Pod network the Route controller owns.
	ClusterCIDR string

	// CloudStatePath is where the cloud keeps its state across restarts
	// ("" keeps it in memory only).
	CloudStatePath string
	// CloudFiles writes that file (default datafs.OS{}).
	CloudFiles datafs.Writer
	// CloudQuotas are the cloud's quotas (zero: cloud.DefaultQuotas).
	CloudQuotas cloud.Quotas
	// Nodes is how many instances are launched when the cloud has none
	// (first start); a restored cloud keeps the ones it had.
	Nodes int
	// CloudLatency delays every cloud call (slow-motion demos).
	CloudLatency time.Duration
	// HeartbeatInterval is how often each kubelet renews its Lease
	// (kubelet.Config's; 0: the lab's 2.5 s). It must stay well inside the
	// control plane's node-monitor-grace-period: a benchmark with
	// upstream's timing gives 10 s here and 50 s there.
	HeartbeatInterval time.Duration

	// Controllers enabled at start, as profile.ParseControllers returns
	// them (nil: none), and add-ons, as in controllers.Config.
	// The lbc add-on is the AWS Load Balancer Controller's Deployment
	// (lbcpod.go): it needs ControlPlaneNode.
	Controllers []string
	Addons      []string
	Tuning      controllers.Tuning
	// Upstream replaces the lab's cloud provider, as in controllers.Config.
	Upstream func(caller string, client kubernetes.Interface, factory informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error)
	// AWSAPI returns the lab's AWS API endpoint on loopback (lab/awsapi),
	// read each time the lbc add-on's container starts: the AWS Load
	// Balancer Controller talks ELBv2 and EC2 to it. Required with the
	// add-on (Start sets it).
	AWSAPI func() string
	// AWSKeys is that API's key store: the controller signs with the key
	// it issues it, which names it in the call log.
	AWSKeys *awsapi.Keys

	// OnChange receives every flow change (optional). It is called under
	// the observer's lock and must not block.
	OnChange func(flow.Change)
	// OnTrace receives every data-plane trace after the observer has seen
	// it (optional).
	OnTrace func(dataplane.Trace)
	// OnSwitch receives the controllers' status after every switch, once
	// the observer has re-derived the flows (optional).
	OnSwitch func(status map[string]bool)

	// ControlPlaneNode launches (on first start, or when it is missing) one
	// more instance, tagged kubelet.ControlPlaneTag, whose kubelet registers
	// a control-plane node and keeps the static Pods' mirror Pods:
	// StaticPods (the control plane's manifests) and the CCM's.
	ControlPlaneNode bool
	StaticPods       []*v1.Pod
	// Logs holds the Pods' logs (kubectl logs); nil: a store of its own.
	Logs *podlog.Store
	// CACertPEM and CAKeyPEM sign the kubelets' serving certificates; without
	// them no kubelet API runs.
	CACertPEM, CAKeyPEM []byte

	// Infra reaches the kubevirt profile's management apiserver
	// (controlplane.Infra): with it the profile's VMs are VMIs there and
	// its CCM a Deployment there (kubevirt.go). Required for kubevirt with
	// a control-plane node.
	Infra *rest.Config

	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Logs == nil {
		c.Logs = podlog.New(AppLogBytes, 0)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.RestConfig == nil:
		return errors.New("sim: RestConfig is required")
	case c.Profile.Name == "":
		return errors.New("sim: Profile is required")
	case c.Nodes < 0:
		return errors.New("sim: Nodes must not be negative")
	case c.CloudLatency < 0:
		return errors.New("sim: CloudLatency must not be negative")
	case c.HeartbeatInterval < 0:
		return errors.New("sim: HeartbeatInterval must not be negative")
	case c.Profile.Name == "kubevirt" && c.ControlPlaneNode && c.Infra == nil:
		return errors.New("sim: the kubevirt profile needs its management apiserver (Infra)")
	case slices.Contains(c.Addons, controllers.AddonLBC) && !c.ControlPlaneNode:
		return errors.New("sim: the lbc add-on runs as the AWS Load Balancer Controller's Deployment, whose webhooks the apiserver reaches on the lab's cluster network: it needs the embedded control plane (ControlPlaneNode)")
	}
	return nil
}

// Sim is the assembled simulation. Its parts are exported for the
// composition root and tests to use directly; Go runs them all.
type Sim struct {
	Cloud *cloud.Cloud
	// Client serves the data plane, the observer and whoever assembles
	// more on top (exercises).
	Client    kubernetes.Interface
	Kubelets  *kubelet.Manager
	Manager   *controllers.Manager
	Dataplane *dataplane.Dataplane
	Observer  *flow.Observer
	// Logs holds every Pod's log, as `kubectl logs` reads it.
	Logs *podlog.Store
	// History records what happens, with who did it, for the exercises'
	// checks.
	History *history.Recorder

	follower *history.Follower
	cfg      Config
	// ccmApplied is closed once the CCM's DaemonSet and RBAC exist
	// (runCCMObjects), so a switch at start waits for them.
	ccmApplied chan struct{}
	// lbcHooks are the AWS Load Balancer Controller's webhook listeners
	// (lbcpod.go).
	lbcHooks lbcWebhooks
	// lbcApplied is closed once the controller's objects exist
	// (runLBCObjects), so a switch at start waits for them.
	lbcApplied chan struct{}
}

// New builds the simulation: it opens (or restores) the cloud and launches
// the first instances; nothing else runs until Go. On error the cloud is
// closed again.
func New(ctx context.Context, cfg Config) (_ *Sim, err error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ingress := cloud.IngressHostname
	if cfg.Profile.IngressIP {
		ingress = cloud.IngressIP
	}
	// EC2 holds pending, stopping and shutting-down for a while; the served
	// lab does too (docs/aws.md, "Instance state changes").
	cc := cloud.Config{IngressMode: ingress, StatePath: cfg.CloudStatePath, Files: cfg.CloudFiles, Quotas: cfg.CloudQuotas,
		InstanceTransition: cloud.DefaultInstanceTransition}
	kv := cfg.Profile.Name == "kubevirt" && cfg.Infra != nil
	if kv {
		// The tenant's VMs are named as Cluster API names Machines.
		cc.HostName = kubevirtHostName(cmp.Or(cc.ClusterID, "ccmlab"))
	}
	c, err := cloud.New(cc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if cfg.CloudLatency > 0 {
		// The flag sets the latency; the other faults a restart restored
		// from the cloud's state stay in force.
		f := c.Faults()
		f.Latency = cloud.Duration{Duration: cfg.CloudLatency}
		if err := c.SetFaults(f); err != nil {
			return nil, err
		}
	}
	// Instances are launched on first start only: on a restart the cloud's
	// saved state already has them.
	if len(c.Snapshot().Instances) == 0 {
		for i := range cfg.Nodes {
			if _, err := c.RunInstance(cloud.WithCaller(ctx, "ccmlab"), cloud.RunInstanceInput{}); err != nil {
				return nil, fmt.Errorf("launching instance %d: %w", i+1, err)
			}
		}
	}

	if cfg.ControlPlaneNode {
		if err := ensureControlPlaneInstance(ctx, c, cfg.Profile.ProviderName == "aws"); err != nil {
			return nil, err
		}
	}

	// Every part talks protobuf, as the kubelet and the controller-manager
	// do: a JSON Lease renewal costs the apiserver several times the CPU,
	// and with 1,000 nodes renewing every 2.5 s that is the bulk of its
	// work. One encoding for all watchers also lets the apiserver serialize
	// each watch event once.
	cfg.RestConfig = rest.CopyConfig(cfg.RestConfig)
	cfg.RestConfig.ContentType = runtime.ContentTypeProtobuf
	cfg.RestConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	s := &Sim{Cloud: c, cfg: cfg, Logs: cfg.Logs, ccmApplied: make(chan struct{}), lbcApplied: make(chan struct{})}
	if s.Client, err = kubernetes.NewForConfig(cfg.RestConfig); err != nil {
		return nil, err
	}
	// The kubelets get a client without client-side rate limiting: 1,000
	// nodes renewing Leases would otherwise queue behind the limit and go
	// NotReady.
	kubeletCfg := rest.CopyConfig(cfg.RestConfig)
	kubeletCfg.QPS = -1
	// Field manager "kubelet", as a real kubelet's writes are named in
	// metadata.managedFields.
	kubeletCfg.UserAgent = "kubelet/ccmlab"
	kubeletClient, err := kubernetes.NewForConfig(kubeletCfg)
	if err != nil {
		return nil, err
	}
	// The data plane answers requests that reach a Pod through the
	// container runtime, which sends its Pods' requests through the data
	// plane: the runtime comes second, behind a closure.
	var rt *podruntime.Runtime
	if s.Dataplane, err = dataplane.New(dataplane.Config{
		Client: s.Client, Cloud: c, Profile: cfg.Profile, Logger: cfg.Logger,
		OnDeliver: accessLog(cfg.Logs, time.Now),
		Serve:     func(r dataplane.ServeRequest) (dataplane.ServeResult, error) { return rt.Serve(r) },
		// With the embedded control plane kube-system runs the lab's
		// CoreDNS (kubesystem.go), which answers the Pods' queries.
		DNS: dataplane.DNSConfig{
			ThroughService: cfg.ControlPlaneNode,
			Listens:        func(p *v1.Pod, port int32) bool { return rt.Listens(p, port) },
		},
	}); err != nil {
		return nil, err
	}
	if rt, err = podruntime.New(podruntime.Config{Network: s.Dataplane, Logger: cfg.Logger.With("component", "runtime")}); err != nil {
		return nil, err
	}
	kc := kubelet.Config{
		Client: kubeletClient, Cloud: c, Profile: cfg.Profile, Logger: cfg.Logger.With("component", "kubelet"),
		Logs: cfg.Logs, CACertPEM: cfg.CACertPEM, CAKeyPEM: cfg.CAKeyPEM,
		HeartbeatInterval: cfg.HeartbeatInterval,
		Containers:        rt, // every Pod's containers but mirror Pods' and the CCM's
	}
	if cfg.ControlPlaneNode {
		// The CCM runs as its DaemonSet's Pod on the control-plane node
		// (ccmpod.go); that node's kubelet runs its container.
		kc.StaticPods = s.staticPods
		kc.Runtime = runtimes{ccmRuntime{s: s}, lbcRuntime{s: s}}
	}
	if kv {
		// The chapter's tenant shows its first (control-plane) node with
		// no taint at all.
		kc.ControlPlaneUntainted = true
	}
	if s.Kubelets, err = kubelet.New(kc); err != nil {
		return nil, err
	}
	mc := controllers.Config{
		RestConfig: cfg.RestConfig, Cloud: c, Profile: cfg.Profile, ClusterCIDR: cfg.ClusterCIDR,
		Enabled: cfg.Controllers, Addons: cfg.Addons, Tuning: cfg.Tuning, Logger: cfg.Logger,
		Upstream: cfg.Upstream,
	}
	if s.lbcOn() {
		mc.AddonSwitch = s.switchLBC // lbcpod.go: the Deployment scaled
	}
	if cfg.ControlPlaneNode {
		mc.Switch = s.switchCCM // the switches patch the CCM's DaemonSet
	}
	if kv {
		// The CCM is the management side's Deployment, over VMIs.
		mc.Switch = s.switchInfraCCM
		mc.Upstream = s.kubevirtUpstream
	}
	if s.Manager, err = controllers.NewManager(mc); err != nil {
		return nil, err
	}
	if s.Observer, err = flow.New(flow.Config{
		Client: s.Client, Cloud: c, Controllers: s.Manager.Status,
		OnChange: cfg.OnChange, Logger: cfg.Logger.With("component", "flow"),
	}); err != nil {
		return nil, err
	}
	if s.History, err = history.New(history.Config{}); err != nil {
		return nil, err
	}
	s.History.SetSwitches(s.Manager.Status())
	if s.follower, err = history.NewFollower(s.History, history.Sources{Client: s.Client, Cloud: c, Dataplane: s.Dataplane}); err != nil {
		return nil, err
	}
	return s, nil
}

// Go adds every part, and the wiring between them, to g; they run until
// ctx (g's context) ends, and the first failure cancels it. A part that
// returns because ctx ended is not a failure.
func (s *Sim) Go(ctx context.Context, g *errgroup.Group) {
	for _, p := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"kubelets", s.Kubelets.Run},
		{"cloud-controller-manager", s.Manager.Run},
		{"dataplane", s.Dataplane.Run},
		{"flow", s.Observer.Run},
		{"controller switches", s.followSwitches},
		{"traces", s.followTraces},
		{"history", s.follower.Run},
	} {
		Go(ctx, g, p.name, p.run)
	}
	if s.isKubevirt() {
		Go(ctx, g, "kubevirt vmis", s.runVMIs)               // kubevirt.go
		Go(ctx, g, "kubevirt ccm deployment", s.runInfraCCM) // kubevirt.go
	}
	if s.cfg.ControlPlaneNode {
		if !s.isKubevirt() {
			Go(ctx, g, "ccm daemonset", s.runCCMObjects) // ccmpod.go
		}
		if !s.lbcOn() {
			Go(ctx, g, "kube-system add-ons", s.runKubeSystem) // kubesystem.go
		} else {
			// As a cluster gets them: kubeadm's add-ons, then the
			// controller's chart (lbcpod.go), whose Service webhook fails
			// closed: kube-dns created before the controller runs would
			// be refused.
			Go(ctx, g, "kube-system add-ons and aws-load-balancer-controller", func(ctx context.Context) error {
				if err := s.runKubeSystem(ctx); err != nil || ctx.Err() != nil {
					return err
				}
				return s.runLBCObjects(ctx)
			})
			Go(ctx, g, "aws-load-balancer-controller switch", s.followLBC)
		}
	}
}

// Go runs one named part in g, with the rule of Sim.Go: an error after ctx
// ended is the part stopping, not failing.
func Go(ctx context.Context, g *errgroup.Group, name string, run func(context.Context) error) {
	g.Go(func() error {
		if err := run(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// followSwitches re-derives the flows when a controller is switched: what
// is stuck, and why, depends on which controllers run.
func (s *Sim) followSwitches(ctx context.Context) error {
	ch, stop := s.Manager.Subscribe(64)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case sc, ok := <-ch:
			if !ok {
				return nil
			}
			s.History.Record(history.Entry{Kind: history.KindSwitch, Switch: &history.Switch{Controller: sc.Controller, On: sc.Enabled}})
			s.Observer.ControllersChanged()
			if s.cfg.OnSwitch != nil {
				s.cfg.OnSwitch(s.Manager.Status())
			}
		}
	}
}

// followTraces hands every request trace to the observer: step 6.
func (s *Sim) followTraces(ctx context.Context) error {
	ch, stop := s.Dataplane.SubscribeTraces(256)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case t, ok := <-ch:
			if !ok {
				return nil
			}
			s.Observer.ObserveTrace(flow.TraceInfo{ID: t.ID, LB: t.LB, Service: t.Service, ServiceUID: t.ServiceUID, Status: t.Status, Time: t.Time})
			if s.cfg.OnTrace != nil {
				s.cfg.OnTrace(t)
			}
		}
	}
}

// WaitForSync waits until the kubelets, the data plane and the observer
// have their caches, so what they report reflects the cluster.
func (s *Sim) WaitForSync(ctx context.Context) error {
	for _, p := range []interface{ WaitForSync(context.Context) error }{s.Kubelets, s.Dataplane, s.Observer, s.follower} {
		if err := p.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close saves the cloud's state; call it after the parts have stopped.
func (s *Sim) Close() error { return s.Cloud.Close() }

// staticPods are the control-plane node's manifests: the control
// plane's. The CCM is no static Pod: its DaemonSet's Pod runs it.
func (s *Sim) staticPods() []kubelet.StaticPod {
	out := make([]kubelet.StaticPod, 0, len(s.cfg.StaticPods))
	for _, p := range s.cfg.StaticPods {
		out = append(out, kubelet.StaticPod{Pod: p})
	}
	return out
}

// ensureControlPlaneInstance launches the control-plane instance unless
// one that is not terminated exists. On AWS it has termination protection
// (protect), as one would give the instance a self-managed cluster's
// control plane runs on: terminating it would take the lab's API server
// with it, so TerminateInstances refuses it with EC2's own error.
func ensureControlPlaneInstance(ctx context.Context, c *cloud.Cloud, protect bool) error {
	for _, inst := range c.Snapshot().Instances {
		if kubelet.IsControlPlane(inst) && inst.State != cloud.InstanceTerminated {
			return nil
		}
	}
	// The last zone, so that the first workers, spread from the first
	// zone on, keep the addresses (and so the Node names) they had before
	// the lab had a control-plane node; an attached lab's workers then do
	// not collide with a ccmlab host's control-plane node either.
	zones := c.Config().Zones
	_, err := c.RunInstance(cloud.WithCaller(ctx, "ccmlab"), cloud.RunInstanceInput{
		Zone:                  zones[len(zones)-1],
		Tags:                  map[string]string{"Name": "control-plane", kubelet.ControlPlaneTag: "1"},
		DisableAPITermination: protect,
	})
	if err != nil {
		return fmt.Errorf("launching the control-plane instance: %w", err)
	}
	return nil
}
