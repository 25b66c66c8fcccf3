package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ccmlab/ccmlab/lab/profile"
)

// A hosted manager (Config.Switch set) runs no CCM controller of its own:
// they run inside CCM processes, each the run of one CCM Pod's container
// (RunProcess), with that container's arguments and credentials, behind
// leader election on the Lease upstream uses. The manager stays the lab's
// one view of the CCM: Status is what the leading process runs, and
// Enable/Disable ask Switch to change the CCM's --controllers (the lab
// patches its DaemonSet) and wait until a process runs with them.

// Process is one run of a cloud-controller-manager.
type Process struct {
	Args Args
	// Hostname is the first half of the leader-election identity
	// (upstream: os.Hostname() + "_" + a fresh UUID); the Pod's name here.
	Hostname string
	// Config returns the client configuration a controller acts with, by
	// upstream's client name ("node-controller", "service-controller",
	// "route-controller"; "" for the CCM's own, which leader election
	// uses): the Pod's ServiceAccount, or with
	// --use-service-account-credentials each controller's own.
	Config func(clientName string) (*rest.Config, error)
	// LeaseConfig, when set, is where the leader election's Lease and its
	// events live instead of Config(""): the kubevirt profile's CCM runs
	// in the management cluster and keeps its Lease there, out of the
	// tenant it acts on.
	LeaseConfig *rest.Config

	tuning Tuning
	cidrs  []*net.IPNet
}

// clientNames are upstream's client names of the controllers
// (k8s.io/cloud-provider app.DefaultInitFuncConstructors' ClientName).
var clientNames = map[string]string{
	profile.Node:          "node-controller",
	profile.NodeLifecycle: "node-controller",
	profile.Route:         "route-controller",
	profile.Service:       "service-controller",
}

func (p *Process) clientConfig(controller string) (*rest.Config, error) {
	name := ""
	if p.Args.UseServiceAccountCredentials {
		name = clientNames[controller]
	}
	return p.Config(name)
}

// leader is the process whose controllers run now.
type leader struct {
	p   *Process
	gen uint64
}

// Identity is the leader-election identity of the process that leads, or
// "" while none does.
func (m *Manager) Identity() string {
	m.stMu.RLock()
	defer m.stMu.RUnlock()
	return m.leaderID
}

// RunProcess runs one CCM process until ctx ends (its container is
// stopped: it returns nil) or it fails as the binary would exit (an error:
// an unknown cloud provider, a bad --cluster-cidr, the leader election
// lost). Only a hosted manager runs processes.
func (m *Manager) RunProcess(ctx context.Context, p Process) error {
	if m.cfg.Switch == nil {
		return errors.New("controllers: RunProcess needs a hosted manager (Config.Switch)")
	}
	if p.Config == nil {
		return errors.New("controllers: Process.Config is required")
	}
	if p.Args.CloudProvider != m.cfg.Profile.ProviderName {
		err := fmt.Errorf("could not init cloud provider %q: unknown cloud provider", p.Args.CloudProvider)
		klog.ErrorS(err, "Cloud provider could not be initialized")
		return err
	}
	p.tuning = p.Args.tuning(m.cfg.Tuning)
	p.Args.ClusterName = cmp.Or(p.Args.ClusterName, m.cfg.ClusterName)
	if p.Args.Controllers[profile.Route] {
		cidrs, err := parseCIDRs(p.Args.ClusterCIDR)
		if err != nil {
			klog.ErrorS(err, "Error starting controller", "controller", upstreamNames[profile.Route])
			return err
		}
		p.cidrs = cidrs
	}
	klog.InfoS("Starting cloud-controller-manager", "cloudProvider", p.Args.CloudProvider, "controllers", p.Args.Enabled(m.cfg.Profile))

	if !p.Args.LeaderElect {
		m.lead(ctx, &p)
		return nil
	}
	// OnStartedLeading runs in a goroutine of the elector's; the process
	// ends only once its controllers have stopped.
	var (
		runMu    sync.Mutex
		finished bool
		leading  chan struct{}
	)
	run := func(ctx context.Context) {
		runMu.Lock()
		if finished {
			runMu.Unlock()
			return
		}
		leading = make(chan struct{})
		done := leading
		runMu.Unlock()
		defer close(done)
		m.lead(ctx, &p)
	}
	defer func() {
		runMu.Lock()
		finished = true
		done := leading
		runMu.Unlock()
		if done != nil {
			<-done
		}
	}()
	own := p.LeaseConfig
	if own == nil {
		var err error
		if own, err = p.Config(""); err != nil {
			return err
		}
	}
	own = rest.CopyConfig(own)
	own.UserAgent = "cloud-controller-manager/leader-election"
	client, err := kubernetes.NewForConfig(own)
	if err != nil {
		return err
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	id := p.Hostname + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, p.Args.LeaseNamespace, p.Args.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{
			Identity:      id,
			EventRecorder: events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cloud-controller-manager"}),
		})
	if err != nil {
		return err
	}
	lost := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: p.Args.LeaseDuration,
		RenewDeadline: p.Args.RenewDeadline,
		RetryPeriod:   p.Args.RetryPeriod,
		Name:          p.Args.LeaseName,
		// Upstream keeps the Lease until it expires (15s by default) when
		// the process stops; the lab releases it so a switch, which rolls
		// the Pod, does not wait that long for the next CCM to lead.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				m.setLeader(id)
				run(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					// Upstream exits here; its kubelet restarts it.
					klog.ErrorS(nil, "leaderelection lost")
					lost = true
				}
			},
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	if lost {
		return errors.New("leaderelection lost")
	}
	return nil
}

func (m *Manager) setLeader(id string) {
	m.stMu.Lock()
	m.leaderID = id
	m.stMu.Unlock()
}

// lead starts p's controllers, keeps them until ctx ends, and stops them.
func (m *Manager) lead(ctx context.Context, p *Process) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	// A process that lost its lease may still be stopping; two never act
	// at once.
	m.stopProcessLocked()
	m.gen++
	me := &leader{p: p, gen: m.gen}
	m.leading = me
	for _, name := range m.cfg.Profile.Controllers {
		if !p.Args.Controllers[name] {
			continue
		}
		if err := m.startIn(ctx, name, p); err != nil {
			klog.ErrorS(err, "Error starting controller", "controller", upstreamNames[name])
			m.log.Warn("controller did not start with its process", "controller", name, "err", err)
			if errors.Is(err, ErrBusy) {
				// The previous instance still had requests in flight:
				// try again while this process leads, rather than leave
				// the controller off until the next roll.
				go m.retryStart(ctx, me, name, p)
			}
			continue
		}
		m.setOn(name, true)
	}
	m.ready.Broadcast()
	m.mu.Unlock()

	<-ctx.Done()
	m.mu.Lock()
	if m.leading == me {
		m.stopProcessLocked()
	}
	m.mu.Unlock()
}

// stopProcessLocked stops the leading process's controllers.
func (m *Manager) stopProcessLocked() {
	if m.leading == nil {
		return
	}
	var wg sync.WaitGroup
	var dmu sync.Mutex
	for name, u := range m.units {
		if u.proc != m.leading.p {
			continue
		}
		wg.Go(func() {
			if !m.stopUnit(u) {
				dmu.Lock()
				m.draining[name] = u.gate
				dmu.Unlock()
			}
		})
		delete(m.units, name)
	}
	wg.Wait()
	for _, name := range m.cfg.Profile.Controllers {
		if m.isOn(name) {
			m.setOn(name, false)
		}
	}
	m.leading = nil
	m.setLeader("")
	m.ready.Broadcast()
}

// switchHosted asks Switch for name on or off and waits until a process
// leads that runs it so.
func (m *Manager) switchHosted(name string, on bool) error {
	m.switchMu.Lock()
	defer m.switchMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Tuning.SwitchTimeout)
	defer cancel()
	if err := m.cfg.Switch(ctx, name, on); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.ready.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.stopped {
			return ErrStopped
		}
		if l := m.leading; l != nil && l.p.Args.Controllers[name] == on {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: no cloud-controller-manager runs with %s %s after %s (is its Pod running?)",
				ErrBusy, name, map[bool]string{true: "on", false: "off"}[on], m.cfg.Tuning.SwitchTimeout)
		}
		m.ready.Wait()
	}
}

// ccmController reports whether name is a CCM controller (not an add-on).
func (m *Manager) ccmController(name string) bool {
	return slices.Contains(m.cfg.Profile.Controllers, name)
}

// retryStart starts a controller of the leading process p whose start
// found the previous instance still busy, once that instance has drained,
// for as long as p leads (me is still the leader and ctx lives).
func (m *Manager) retryStart(ctx context.Context, me *leader, name string, p *Process) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		m.mu.Lock()
		if m.leading != me || ctx.Err() != nil {
			m.mu.Unlock()
			return
		}
		if _, running := m.units[name]; running {
			m.mu.Unlock()
			return
		}
		err := m.startIn(ctx, name, p)
		if err == nil {
			m.setOn(name, true)
			m.ready.Broadcast()
		}
		m.mu.Unlock()
		if err == nil {
			m.log.Info("controller started after its previous instance drained", "controller", name)
			return
		}
		if !errors.Is(err, ErrBusy) {
			m.log.Warn("controller did not start with its process", "controller", name, "err", err)
			return
		}
	}
}
