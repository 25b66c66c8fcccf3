package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// errNodeGone means the Node was deleted underneath a running kubelet.
var errNodeGone = errors.New("node object is gone")

// kubelet is the simulated kubelet of one instance. The struct lives as long
// as the instance is listed by the cloud; start and stop follow the
// instance's state, so a stopped and restarted VM is the same kubelet with
// a new boot ID.
type kubelet struct {
	m    *Manager
	name string // Node name: the instance's PrivateDNSName, as on AWS
	log  *slog.Logger

	mu   sync.Mutex
	inst cloud.Instance
	// ctx is nil while stopped. Pod workers make this node's API calls with
	// it, so nothing is written for a node once its instance has stopped.
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	lastBeat time.Time

	// nodeGone is poked (never blocking) when the Node's deletion is seen.
	nodeGone chan struct{}
	// controlPlane: this is the control-plane node, which keeps mirror
	// Pods; staticPoke asks it to sync them (staticpods.go).
	controlPlane bool
	staticPoke   chan struct{}

	// Owned by whoever drives the kubelet: its run goroutine, or a
	// benchmark in its place. bootID is set by start before that begins.
	bootID     string
	nodeUID    types.UID
	lease      *coordinationv1.Lease
	lastStatus time.Time
}

func newKubelet(m *Manager, inst cloud.Instance) *kubelet {
	return &kubelet{
		m:        m,
		name:     inst.PrivateDNSName,
		log:      m.cfg.Logger.With("node", inst.PrivateDNSName, "instance", inst.ID),
		inst:     inst,
		nodeGone: make(chan struct{}, 1),

		controlPlane: IsControlPlane(inst),
		staticPoke:   make(chan struct{}, 1),
	}
}

func (k *kubelet) instance() cloud.Instance {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.inst
}

func (k *kubelet) setInstance(inst cloud.Instance) {
	k.mu.Lock()
	k.inst = inst
	k.mu.Unlock()
}

// runContext returns the context of the current run, or nil when stopped.
func (k *kubelet) runContext() context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ctx
}

func (k *kubelet) running() bool { return k.runContext() != nil }

// start boots the kubelet unless it is running already.
func (k *kubelet) start(parent context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	k.ctx, k.cancel, k.done = ctx, cancel, done
	k.bootID = string(uuid.NewUUID()) // a new boot, as after a real VM start
	k.log.Debug("kubelet starting")
	go func() {
		defer close(done)
		k.run(ctx)
	}()
}

// stop ends the run and returns a channel closed once it has ended. A
// stopped kubelet just goes quiet: the node-lifecycle controller is what
// notices, as with a VM that lost power.
func (k *kubelet) stop() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	k.cancel()
	done := k.done
	k.ctx, k.cancel, k.done = nil, nil, nil
	k.log.Debug("kubelet stopped")
	return done
}

func (k *kubelet) lastHeartbeat() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastBeat
}

func (k *kubelet) pokeNodeGone() {
	select {
	case k.nodeGone <- struct{}{}:
	default:
	}
}

func (k *kubelet) run(ctx context.Context) {
	interval := k.m.cfg.HeartbeatInterval
	registered := false
	staticDirty := k.controlPlane
	t := k.m.cfg.Clock.NewTimer(0) // register right away
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.nodeGone:
			registered = false
			t.Stop()
		case <-k.staticPoke:
			if registered {
				staticDirty = k.syncStaticPods(ctx) != nil
			} else {
				staticDirty = true
			}
			continue
		case <-t.C():
		}
		if registered && staticDirty {
			staticDirty = k.syncStaticPods(ctx) != nil
		}
		var next time.Duration
		switch {
		case !registered:
			if err := k.register(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				k.log.Warn("registering node", "err", err)
				next = interval
				break
			}
			registered = true
			k.m.enqueueNodePods(k.name)
			if staticDirty {
				staticDirty = k.syncStaticPods(ctx) != nil
			}
			// A random phase spreads many nodes' renewals over the whole
			// interval instead of bunching them up at start.
			next = time.Duration(rand.Int64N(int64(interval) + 1))
		default:
			err := k.heartbeat(ctx)
			if errors.Is(err, errNodeGone) {
				k.log.Info("node was deleted; registering again")
				registered = false
				next = 0
				break
			}
			if err != nil && ctx.Err() == nil {
				k.log.Warn("heartbeat", "err", err)
			}
			next = jitter(interval)
		}
		t.Reset(next)
	}
}

// jitter spreads d by ±10% so nodes that started together drift apart
// rather than renewing in lockstep; the mean stays d.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

func (k *kubelet) now() time.Time { return k.m.cfg.Clock.Now() }

// register creates the Node, or adopts the one already there (a restarted
// lab or a restarted instance) without touching its spec: the CCM may have
// initialized it, and re-adding the uninitialized taint would undo that.
func (k *kubelet) register(ctx context.Context) error {
	inst := k.instance()
	now := metav1.NewTime(k.now())
	nodes := k.m.cfg.Client.CoreV1().Nodes()
	n := newNode(inst, k.bootID, now)
	if k.m.cfg.ControlPlaneUntainted {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == LabelControlPlane })
	}
	created, err := nodes.Create(ctx, n, metav1.CreateOptions{})
	switch {
	case err == nil:
		k.nodeUID = created.UID
		k.log.Debug("registered node")
	case apierrors.IsAlreadyExists(err):
		existing, err := nodes.Get(ctx, k.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading existing node: %w", err)
		}
		if err := k.patchStatus(ctx, existing, now, true); err != nil {
			return fmt.Errorf("updating existing node: %w", err)
		}
		k.nodeUID = existing.UID
		k.log.Debug("node already registered; resuming")
	default:
		return fmt.Errorf("creating node: %w", err)
	}
	k.lastStatus = now.Time
	k.lease = nil // the owner may be a new Node now
	if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
		// Registered all the same; the next heartbeat tries again.
		k.log.Warn("renewing lease", "err", err)
	}
	return nil
}

// heartbeat renews the Lease and writes the node's conditions when they
// differ from what the kubelet would say or NodeStatusInterval has passed.
// The Lease is the cheap signal; status writes stay rare, which is the
// point of node leases.
func (k *kubelet) heartbeat(ctx context.Context) error {
	leaseErr := k.renewLease(ctx)
	node, _ := k.m.nodes.Get(k.name) // informer cache: reading costs nothing
	now := k.now()
	if (node != nil && conditionsDiffer(node)) || now.Sub(k.lastStatus) >= k.m.cfg.NodeStatusInterval {
		if err := k.patchStatus(ctx, node, metav1.NewTime(now), false); err != nil {
			if apierrors.IsNotFound(err) {
				return errNodeGone
			}
			return errors.Join(leaseErr, fmt.Errorf("updating node status: %w", err))
		}
		k.lastStatus = now
	}
	return leaseErr
}

func (k *kubelet) patchStatus(ctx context.Context, current *v1.Node, now metav1.Time, full bool) error {
	patch, err := statusPatch(current, k.instance(), k.bootID, now, full)
	if err != nil {
		return err
	}
	_, err = k.m.cfg.Client.CoreV1().Nodes().Patch(ctx, k.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// renewLease writes the Lease with one Update from the copy kept since the
// last renewal; only after a conflict or a deleted Lease does it read (and
// if need be create) the Lease again.
func (k *kubelet) renewLease(ctx context.Context) error {
	leases := k.m.cfg.Client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	var err error
	for range 3 {
		now := metav1.NewMicroTime(k.now())
		if k.lease == nil {
			var l *coordinationv1.Lease
			l, err = leases.Get(ctx, k.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				l, err = leases.Create(ctx, newLease(k.name, k.nodeUID, now), metav1.CreateOptions{})
				if err == nil {
					k.lease = l
					k.beat(now.Time)
					return nil
				}
				if apierrors.IsAlreadyExists(err) {
					continue
				}
			}
			if err != nil {
				return fmt.Errorf("lease: %w", err)
			}
			k.lease = l
		}
		l := k.lease.DeepCopy()
		l.Spec.HolderIdentity = ptr.To(k.name)
		l.Spec.LeaseDurationSeconds = ptr.To[int32](leaseDurationSeconds)
		l.Spec.RenewTime = &now
		setLeaseOwner(l, k.name, k.nodeUID)
		l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			k.lease = l
			k.beat(now.Time)
			return nil
		}
		k.lease = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lease: %w", err)
		}
	}
	return fmt.Errorf("lease: %w", err)
}

func (k *kubelet) beat(t time.Time) {
	k.mu.Lock()
	k.lastBeat = t
	k.mu.Unlock()
}
