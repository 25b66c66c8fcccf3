package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

const (
	nodeNameIndex = "spec.nodeName"
	// cloudEventBuffer absorbs bursts of cloud events (every API call makes
	// two); overflow is caught by the Seq gap check and the periodic resync.
	cloudEventBuffer = 1024
)

// Status is what Kubelets reports about one simulated kubelet.
type Status struct {
	NodeName   string `json:"nodeName"`
	InstanceID string `json:"instanceID"`
	// Running is whether the kubelet runs, i.e. its instance is running.
	Running bool `json:"running"`
	// Pods is how many Pods are bound to the node.
	Pods int `json:"pods"`
	// LastHeartbeat is the RenewTime of the last successful Lease renewal;
	// zero before the first.
	LastHeartbeat time.Time `json:"lastHeartbeat,omitzero"`
}

// Manager runs one simulated kubelet per running cloud instance. All
// kubelets share one Pod and one Node informer, so 1,000 nodes cost two
// watches, not 2,000.
type Manager struct {
	cfg Config
	log *slog.Logger

	podInformer  cache.SharedIndexInformer
	nodeInformer cache.SharedIndexInformer
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	// queue holds Pod keys ("namespace/name"); Run creates it.
	queue workqueue.TypedRateLimitingInterface[string]

	// vpcPool is the single, cluster-wide pool of the vpc-cni profile; nil
	// in podCIDR mode.
	vpcPool  *ipPool
	vpcRange netip.Prefix

	mu       sync.Mutex
	kubelets map[string]*kubelet // by instance ID
	byNode   map[string]*kubelet // by Node name
	// pools are per Node name rather than per kubelet so that IPs outlive
	// a kubelet's stop and start, and a purged instance whose Pods linger.
	pools map[string]*ipPool

	started atomic.Bool
	synced  chan struct{}

	api    *apiServer // nil without Config.Logs and CA
	events *eventSink
	rt     runtimePods // containers Config.Runtime runs
	prt    podRuntimes // containers Config.Containers runs
}

// New builds a Manager. Nothing runs until Run.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger,
		kubelets: map[string]*kubelet{},
		byNode:   map[string]*kubelet{},
		pools:    map[string]*ipPool{},
		synced:   make(chan struct{}),
		rt:       runtimePods{byID: map[types.UID]*container{}},
		prt:      podRuntimes{byID: map[types.UID]*podCtrs{}},
	}
	var err error
	if m.api, err = newAPIServer(m); err != nil {
		return nil, err
	}
	m.events = newEventSink(cfg.Client)
	if cfg.Profile.PodIPsFromVPC {
		cc := cfg.Cloud.Config()
		r, err := vpcPodRange(cc.VPCCIDR, len(cc.Zones))
		if err != nil {
			return nil, fmt.Errorf("kubelet: profile %s: %w", cfg.Profile.Name, err)
		}
		m.vpcPool, m.vpcRange = newIPPool(), r
	}

	// Only bound Pods concern a kubelet; the apiserver filters the rest.
	m.podInformer = coreinformers.NewFilteredPodInformer(cfg.Client, metav1.NamespaceAll, 0,
		cache.Indexers{nodeNameIndex: podNodeNameIndex},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		})
	m.nodeInformer = coreinformers.NewNodeInformer(cfg.Client, 0, cache.Indexers{})
	m.pods = corelisters.NewPodLister(m.podInformer.GetIndexer())
	m.nodes = corelisters.NewNodeLister(m.nodeInformer.GetIndexer())
	for _, inf := range []cache.SharedIndexInformer{m.podInformer, m.nodeInformer} {
		if err := inf.SetTransform(kube.DropManagedFields); err != nil {
			return nil, err
		}
	}
	if _, err := m.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.podChanged,
		UpdateFunc: func(_, obj any) { m.podChanged(obj) },
		DeleteFunc: m.podDeleted,
	}); err != nil {
		return nil, err
	}
	if _, err := m.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.nodeAdded,
		UpdateFunc: m.nodeUpdated,
		DeleteFunc: m.nodeDeleted,
	}); err != nil {
		return nil, err
	}
	return m, nil
}

func podNodeNameIndex(obj any) ([]string, error) {
	if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// Run starts the informers and, once they are synced, one kubelet per
// running instance. It follows the cloud through Subscribe and re-reads
// Snapshot every ResyncInterval (or at once when events were dropped).
// When ctx ends it stops every kubelet and returns. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("kubelet: Manager.Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribed before the first Snapshot so that nothing between the two
	// is missed.
	events, unsubscribe := m.cfg.Cloud.Subscribe(cloudEventBuffer)
	defer unsubscribe()

	var wg sync.WaitGroup
	m.startInformers(ctx, &wg)
	m.events.start()
	if m.api != nil {
		wg.Go(func() {
			if err := m.api.serve(); err != nil {
				m.log.Error("kubelet API stopped", "err", err)
			}
		})
	}
	shutdown := func() {
		m.stopAll()
		m.queue.ShutDown()
		if m.api != nil {
			m.api.close()
		}
		cancel()
		wg.Wait()
		m.events.stop()
	}
	if !cache.WaitForCacheSync(ctx.Done(), m.podInformer.HasSynced, m.nodeInformer.HasSynced) {
		shutdown()
		return nil
	}
	// Before any Pod is given an address, learn the ones already handed
	// out, so a restarted lab never gives an IP twice.
	m.adoptPodIPs()
	close(m.synced)
	for range m.cfg.PodWorkers {
		wg.Go(m.podWorker)
	}

	m.syncInstances(ctx)
	resync := m.cfg.Clock.NewTicker(m.cfg.ResyncInterval)
	defer resync.Stop()
	var lastSeq uint64
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-resync.C():
			m.syncInstances(ctx)
		case ev := <-events:
			dirty := instanceEvent(ev, &lastSeq)
			// Take whatever else is queued so a burst costs one Snapshot.
		drain:
			for {
				select {
				case ev := <-events:
					dirty = instanceEvent(ev, &lastSeq) || dirty
				default:
					break drain
				}
			}
			if dirty {
				m.syncInstances(ctx)
			}
		}
	}
	shutdown()
	return nil
}

// instanceEvent reports whether ev may change which kubelets should run: an
// instance changed, or a gap in Seq says events were dropped.
func instanceEvent(ev cloud.Event, lastSeq *uint64) bool {
	gap := *lastSeq != 0 && ev.Seq != *lastSeq+1
	*lastSeq = ev.Seq
	return gap || ev.Kind == cloud.EventInstance
}

func (m *Manager) startInformers(ctx context.Context, wg *sync.WaitGroup) {
	m.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: m.cfg.Clock})
	for _, inf := range []cache.SharedIndexInformer{m.podInformer, m.nodeInformer} {
		wg.Go(func() { inf.Run(ctx.Done()) })
	}
}

// WaitForSync returns once the informers have synced and Run is about to
// start kubelets, or with ctx's error.
func (m *Manager) WaitForSync(ctx context.Context) error {
	select {
	case <-m.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kubelets lists every kubelet, running or not, by Node name.
func (m *Manager) Kubelets() []Status {
	m.mu.Lock()
	ks := make([]*kubelet, 0, len(m.kubelets))
	for _, k := range m.kubelets {
		ks = append(ks, k)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(ks))
	for _, k := range ks {
		pods, _ := m.podInformer.GetIndexer().ByIndex(nodeNameIndex, k.name)
		out = append(out, Status{
			NodeName:      k.name,
			InstanceID:    k.instance().ID,
			Running:       k.running(),
			Pods:          len(pods),
			LastHeartbeat: k.lastHeartbeat(),
		})
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.NodeName, b.NodeName) })
	return out
}

// syncInstances makes the set of running kubelets match the cloud's
// running instances. Only Run's goroutine calls it.
func (m *Manager) syncInstances(ctx context.Context) {
	// Instances, not Snapshot: the kubelets need no load balancer targets.
	insts := m.cfg.Cloud.Instances()
	var start, stop []*kubelet
	m.mu.Lock()
	seen := make(map[string]bool, len(insts))
	for _, inst := range insts {
		seen[inst.ID] = true
		k := m.kubelets[inst.ID]
		if k == nil {
			k = newKubelet(m, inst)
			m.kubelets[inst.ID] = k
			m.byNode[k.name] = k
		} else {
			k.setInstance(inst)
		}
		if inst.State == cloud.InstanceRunning {
			start = append(start, k)
		} else {
			stop = append(stop, k)
		}
	}
	for id, k := range m.kubelets {
		if !seen[id] { // purged an hour after termination
			stop = append(stop, k)
			delete(m.kubelets, id)
			if m.byNode[k.name] == k {
				delete(m.byNode, k.name)
			}
		}
	}
	m.mu.Unlock()
	waitAll(stop)
	for _, k := range start {
		k.start(ctx)
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	ks := make([]*kubelet, 0, len(m.kubelets))
	for _, k := range m.kubelets {
		ks = append(ks, k)
	}
	m.mu.Unlock()
	waitAll(ks)
}

// waitAll stops every kubelet first and then waits, so stopping 1,000 costs
// one round trip, not 1,000.
func waitAll(ks []*kubelet) {
	done := make([]<-chan struct{}, len(ks))
	for i, k := range ks {
		done[i] = k.stop()
	}
	for _, d := range done {
		<-d
	}
}

func (m *Manager) kubeletForNode(name string) *kubelet {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byNode[name]
}

// pool returns the IP pool for Pods on the named node.
func (m *Manager) pool(nodeName string) *ipPool {
	if m.vpcPool != nil {
		return m.vpcPool
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pools[nodeName]
	if p == nil {
		p = newIPPool()
		m.pools[nodeName] = p
	}
	return p
}

// adoptPodIPs records the IPs of Pods that already have one.
func (m *Manager) adoptPodIPs() {
	for _, obj := range m.podInformer.GetIndexer().List() {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" || pod.Spec.HostNetwork || pod.Status.PodIP == "" {
			continue
		}
		m.adoptPodIP(pod)
	}
}

func (m *Manager) adoptPodIP(pod *v1.Pod) {
	addr, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return
	}
	if held, ok := m.pool(pod.Spec.NodeName).lookup(pod.UID); ok && held == addr {
		return // the usual case: known since it was handed out or adopted
	}
	if !m.pool(pod.Spec.NodeName).adopt(pod.UID, addr) {
		m.log.Warn("pod IP is held by another pod", "pod", cache.MetaObjectToName(pod).String(), "ip", addr)
		return
	}
	m.assignVPCAddress(pod, addr) // eniaddrs.go
}

func (m *Manager) enqueueNodePods(nodeName string) {
	if m.queue == nil {
		return
	}
	objs, _ := m.podInformer.GetIndexer().ByIndex(nodeNameIndex, nodeName)
	for _, obj := range objs {
		if pod, ok := obj.(*v1.Pod); ok {
			m.queue.Add(cache.MetaObjectToName(pod).String())
		}
	}
}

func (m *Manager) podChanged(obj any) {
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
		m.queue.Add(cache.MetaObjectToName(pod).String())
	}
}

func (m *Manager) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	m.forgetPodLogs(pod) // server.go
	if m.handled(pod) {
		// Deleted without the kubelet finishing it (grace period 0 from
		// elsewhere): the container stops all the same.
		go m.stopContainer(pod.UID, runtimeGrace)
	} else if m.runsContainers(pod) {
		go m.stopPodContainers(pod.UID, runtimeGrace) // containers.go
	}
	if IsMirrorPod(pod) {
		// Deleting a mirror Pod does not stop a static Pod; its kubelet
		// creates the mirror again.
		if k := m.kubeletForNode(pod.Spec.NodeName); k != nil && k.controlPlane {
			k.pokeStatic()
		}
	}
	if pod.Spec.HostNetwork {
		return
	}
	m.releasePodIP(pod)
}

func (m *Manager) nodeAdded(obj any) {
	if n, ok := obj.(*v1.Node); ok {
		if k := m.kubeletForNode(n.Name); k != nil && k.running() {
			m.enqueueNodePods(n.Name)
		}
	}
}

// nodeUpdated re-syncs the node's Pods when what their status is made of
// changes: the podCIDR they were waiting for, or the InternalIP that the
// CCM's Node controller writes.
func (m *Manager) nodeUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*v1.Node)
	n, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	if o.Spec.PodCIDR != n.Spec.PodCIDR || kube.InternalIP(o) != kube.InternalIP(n) {
		m.nodeAdded(n)
	}
}

func (m *Manager) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*v1.Node); ok {
		if k := m.kubeletForNode(n.Name); k != nil && k.running() {
			k.pokeNodeGone()
		}
	}
}
