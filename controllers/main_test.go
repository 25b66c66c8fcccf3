//go:build !unit

package controllers

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

// labSeq gives every lab in this test binary its own VPC (so node names never
// collide with a previous test's) and its own namespace.
var labSeq atomic.Int32

const labLabel = "ccmlab.test/lab"

// lab is one test's world: a fresh cloud, a manager running against the
// shared control plane, a namespace, and the nodes the test registered.
type lab struct {
	t      testing.TB
	id     string
	ns     string
	cloud  *cloud.Cloud
	mgr    *Manager
	client kubernetes.Interface
	ctx    context.Context

	mu        sync.Mutex
	heartbeat map[string]bool // node name -> renew its Lease
	timeline  []timelineEntry // what a test chose to record, for failure output
}

type timelineEntry struct {
	at    time.Time
	what  string
	about string // the namespace/name of the one Service it concerns; "" for all
}

// note records a moment for lbHistory's failure output.
func (l *lab) note(what string) { l.noteAbout("", what) }

// noteAbout records a moment that matters only to one Service's history.
func (l *lab) noteAbout(service, what string) {
	l.mu.Lock()
	l.timeline = append(l.timeline, timelineEntry{time.Now(), what, service})
	l.mu.Unlock()
}

type labOpt func(*Config)

// newLab starts a manager for the named profile with the given controllers
// on (nil = the profile's default).
func newLab(t testing.TB, profileName string, enabled []string, opts ...labOpt) *lab {
	t.Helper()
	cptest.Need(t)
	n := labSeq.Add(1)
	if n >= 96 {
		n++ // keep clear of the service CIDR 10.96.0.0/16
	}
	prof, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	// Room for BenchmarkConverge's 1,000 Services: past a student's
	// quotas, which TestLoadBalancerQuotas fills on purpose.
	ccfg := cloud.Config{VPCCIDR: fmt.Sprintf("10.%d.0.0/16", n)}
	if _, bench := t.(*testing.B); bench {
		ccfg.Quotas = cloud.ScaleQuotas(1000)
	}
	if prof.IngressIP {
		ccfg.IngressMode = cloud.IngressIP
	}
	cl, err := cloud.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	if enabled == nil {
		enabled = prof.DefaultOn
	}
	cfg := Config{
		RestConfig: env.Config,
		// The control plane's: nodes created over the whole package run
		// get podCIDRs past 10.244.255.0/24, and routes outside the
		// network the Route controller was given are never deleted.
		ClusterCIDR: env.CP.ClusterCIDR(),
		Cloud:       cl,
		Profile:     prof,
		Enabled:     enabled,
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	mgr, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &lab{
		t: t, id: strconv.Itoa(int(n)), ns: fmt.Sprintf("lab-%d", n),
		cloud: cl, mgr: mgr, client: env.Client, ctx: ctx, heartbeat: map[string]bool{},
	}
	if _, err := l.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- mgr.Run(ctx) }()
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		l.heartbeatLoop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Manager.Run: %v", err)
		}
		<-hbDone
		l.cleanup()
	})
	return l
}

// cleanup removes what the test created so the next test's controllers do
// not see it: Services (finalizers stripped, waited for), Nodes, Leases.
func (l *lab) cleanup() {
	ctx := context.Background()
	c := l.client
	svcs, _ := c.CoreV1().Services(l.ns).List(ctx, metav1.ListOptions{})
	for _, s := range svcs.Items {
		if len(s.Finalizers) > 0 {
			_, _ = c.CoreV1().Services(l.ns).Patch(ctx, s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = c.CoreV1().Services(l.ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	sel := metav1.ListOptions{LabelSelector: labLabel + "=" + l.id}
	_ = c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	_ = c.CoordinationV1().Leases(v1.NamespaceNodeLease).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, _ := c.CoreV1().Services(l.ns).List(ctx, metav1.ListOptions{})
		n, _ := c.CoreV1().Nodes().List(ctx, sel)
		if s != nil && n != nil && len(s.Items) == 0 && len(n.Items) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.CoreV1().Namespaces().Delete(ctx, l.ns, metav1.DeleteOptions{})
}

// heartbeatLoop renews the Lease of every node the test keeps alive, as a
// kubelet does, so the controller-manager does not mark it NotReady.
func (l *lab) heartbeatLoop(ctx context.Context) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l.mu.Lock()
		var names []string
		for n, on := range l.heartbeat {
			if on {
				names = append(names, n)
			}
		}
		l.mu.Unlock()
		for _, n := range names {
			lease, err := l.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				continue
			}
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = l.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
		}
	}
}

// launch starts a cloud instance, as `POST /api/cloud/instances` does.
func (l *lab) launch() cloud.Instance {
	l.t.Helper()
	inst, err := l.cloud.RunInstance(cloud.WithCaller(l.ctx, "test"), cloud.RunInstanceInput{})
	if err != nil {
		l.t.Fatal(err)
	}
	return inst
}

// register does what a kubelet with --cloud-provider=external does: create
// the Node named after the instance's private DNS name, tainted
// uninitialized and without providerID, then report Ready and heartbeat.
func (l *lab) register(inst cloud.Instance) *v1.Node {
	l.t.Helper()
	node, err := l.createNode(l.ctx, inst.PrivateDNSName)
	if err != nil {
		l.t.Fatal(err)
	}
	return node
}

func (l *lab) createNode(ctx context.Context, name string) (*v1.Node, error) {
	c := l.client
	// Like the kubelet, register with the status already filled in (the
	// apiserver keeps status on a Node create), so the Node controller's
	// update does not race a separate status write.
	now := metav1.Now()
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labLabel: l.id, v1.LabelHostname: name}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{
			Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule,
		}}},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}},
		},
	}
	node, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease, Labels: map[string]string{labLabel: l.id}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: time.Now()},
		},
	}
	if _, err := c.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	l.mu.Lock()
	l.heartbeat[name] = true
	l.mu.Unlock()
	return node, nil
}

// setReady sets a node's Ready condition as a kubelet (or its absence)
// would, and stops the heartbeat when it is not True.
func (l *lab) setReady(name string, status v1.ConditionStatus) {
	l.t.Helper()
	l.mu.Lock()
	l.heartbeat[name] = status == v1.ConditionTrue
	l.mu.Unlock()
	err := retryConflict(func() error {
		node, err := l.client.CoreV1().Nodes().Get(l.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == v1.NodeReady {
				node.Status.Conditions[i].Status = status
				node.Status.Conditions[i].Reason = "NodeStatusUnknown"
				node.Status.Conditions[i].Message = "Kubelet stopped posting node status."
				node.Status.Conditions[i].LastTransitionTime = now
			}
		}
		_, err = l.client.CoreV1().Nodes().UpdateStatus(l.ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

func retryConflict(f func() error) error {
	for {
		err := f()
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// addNodes launches n instances and registers their Nodes.
func (l *lab) addNodes(n int) []cloud.Instance {
	out := make([]cloud.Instance, n)
	for i := range out {
		out[i] = l.launch()
		l.register(out[i])
	}
	return out
}

// addNodesBeforeServiceController adds n nodes while the Service
// controller is off, waits until they are initialized, and switches it (back)
// on.
//
// Why: nodes joining and being initialized send the upstream Service
// controller's node worker through code that races with its Service syncs
// (see skipInitialNodeAdds in units.go). A Service controller started after
// the nodes have settled has no node work at all (its initial list's Adds
// are skipped), so tests about the Service flow do not depend on that
// race. Concurrency of the two is what TestToggleChurn's node churn covers,
// without -race.
func (l *lab) addNodesBeforeServiceController(n int) []cloud.Instance {
	l.t.Helper()
	was := l.mgr.Status()[profile.Service]
	if err := l.mgr.Disable(profile.Service); err != nil {
		l.t.Fatal(err)
	}
	insts := l.addNodes(n)
	for _, inst := range insts {
		eventually(l.t, 30*time.Second, "node initialized", func() (bool, string) { return nodeInitialized(l, inst) })
	}
	if was {
		if err := l.mgr.Enable(profile.Service); err != nil {
			l.t.Fatal(err)
		}
	}
	return insts
}

// lbService builds a type LoadBalancer Service with one TCP port.
func (l *lab) lbService(name string, class *string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.ns},
		Spec: v1.ServiceSpec{
			Type:              v1.ServiceTypeLoadBalancer,
			LoadBalancerClass: class,
			Selector:          map[string]string{"app": name},
			Ports:             []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}},
		},
	}
}

func (l *lab) createService(svc *v1.Service) *v1.Service {
	l.t.Helper()
	out, err := l.client.CoreV1().Services(l.ns).Create(l.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

func (l *lab) getService(name string) *v1.Service {
	l.t.Helper()
	s, err := l.client.CoreV1().Services(l.ns).Get(l.ctx, name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return s
}

// events returns the events about the object with uid, oldest first.
func (l *lab) events(uid types.UID) []v1.Event {
	l.t.Helper()
	list, err := l.client.CoreV1().Events("").List(l.ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(uid)})
	if err != nil {
		l.t.Fatal(err)
	}
	evs := list.Items
	slices.SortFunc(evs, func(a, b v1.Event) int {
		ra, _ := strconv.ParseUint(a.ResourceVersion, 10, 64)
		rb, _ := strconv.ParseUint(b.ResourceVersion, 10, 64)
		return int(ra) - int(rb)
	})
	return evs
}

// controllerEvents is events minus those of the apiserver's own repair
// loops (ClusterIP, NodePort), which may report on a brand-new Service
// whatever the CCM does.
func (l *lab) controllerEvents(uid types.UID) []v1.Event {
	l.t.Helper()
	return slices.DeleteFunc(l.events(uid), func(e v1.Event) bool {
		return strings.HasSuffix(cmp.Or(e.ReportingController, e.Source.Component), "-repair-controller")
	})
}

func reasons(evs []v1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

// eventually is testutil.Eventually with a floor of 30s on timeout: the race
// pass on a loaded 2-core machine runs several times slower, and a
// condition that holds returns at once anyway.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testutil.Eventually(t, max(timeout, 30*time.Second), what, cond)
}

func hasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}

// lbByName returns the cloud's load balancer of that name.
func (l *lab) lbByName(name string) (cloud.LoadBalancer, bool) {
	for _, lb := range l.cloud.Snapshot().LoadBalancers {
		if lb.Name == name {
			return lb, true
		}
	}
	return cloud.LoadBalancer{}, false
}

func targetIDs(lb cloud.LoadBalancer) []string {
	var out []string
	for _, t := range lb.Targets {
		out = append(out, t.ID+":"+strconv.Itoa(int(t.Port)))
	}
	slices.Sort(out)
	return out
}

func wantTargets(insts []cloud.Instance, port int32) []string {
	var out []string
	for _, i := range insts {
		out = append(out, i.ID+":"+strconv.Itoa(int(port)))
	}
	slices.Sort(out)
	return out
}

func ingressOf(s *v1.Service) string {
	var parts []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		parts = append(parts, in.Hostname+in.IP)
	}
	return strings.Join(parts, ",")
}
