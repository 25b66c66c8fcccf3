//go:build !unit

package dataplane

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// cp is the package's real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler). The KCM's EndpointSlice
// controller builds the slices the data plane routes by, and the
// apiserver allocates ClusterIPs, NodePorts and healthCheckNodePorts.
var cp *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &cp) }

// Generous: under -race the whole control plane runs several times slower.
const waitTimeout = 60 * time.Second

// waitFor is testutil.EventuallyCtx with waitTimeout.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testutil.EventuallyCtx(t, waitTimeout, what, cond)
}

// testLab is one integration test's cloud, nodes and running Dataplane.
type testLab struct {
	t     *testing.T
	cloud *cloud.Cloud
	dp    *Dataplane
	ns    string
	insts []cloud.Instance
	nodes []string
	stop  func()
}

// newTestLab launches n instances in vpc (one VPC per test, so node names
// never collide on the shared apiserver), registers a Ready Node for each
// with podCIDR 10.244.<cidrBase+i>.0/24 (what the kubelet and the Node
// controller would do), routes each podCIDR to its instance (the Route
// controller's job) and starts a Dataplane.
func newTestLab(t *testing.T, vpc string, cidrBase, n int) *testLab {
	t.Helper()
	cptest.Need(t)
	ctx := context.Background()
	c, err := cloud.New(cloud.Config{VPCCIDR: vpc})
	if err != nil {
		t.Fatal(err)
	}
	l := &testLab{t: t, cloud: c}
	uctx := cloud.WithCaller(ctx, "test")
	for i := range n {
		inst, err := c.RunInstance(uctx, cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		podCIDR := fmt.Sprintf("10.244.%d.0/24", cidrBase+i)
		l.registerNode(inst, podCIDR)
		if err := c.CreateRoute(uctx, podCIDR, inst.ID); err != nil {
			t.Fatal(err)
		}
		l.insts = append(l.insts, inst)
		l.nodes = append(l.nodes, inst.PrivateDNSName)
	}
	l.heartbeat()
	l.ns = newNamespace(t)

	p, _ := profile.Get("aws")
	dp, err := New(Config{
		Client: cp.Client, Cloud: c, Profile: p,
		HealthCheckInterval: 200 * time.Millisecond,
		Logger:              slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	l.dp = dp
	l.stop = cptest.Start(t, dp.Run)
	t.Cleanup(l.stop)
	sctx, scancel := context.WithTimeout(ctx, waitTimeout)
	defer scancel()
	if err := dp.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *testLab) registerNode(inst cloud.Instance, podCIDR string) {
	t := l.t
	ctx := context.Background()
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.PrivateDNSName},
		Spec:       v1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", inst.Zone, inst.ID), PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
	}
	created, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		_ = cp.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	// The KCM's controllers touch a new Node too; retry on their writes.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: inst.PrivateIP}, {Type: v1.NodeHostName, Address: inst.PrivateDNSName}}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = cp.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// heartbeat renews each node's Lease, as a kubelet does, so the KCM's
// node-lifecycle controller keeps the Nodes Ready for the whole test.
func (l *testLab) heartbeat() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	l.t.Cleanup(func() { cancel(); wg.Wait() })
	leases := cp.Client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	for _, name := range l.nodes {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			l.t.Fatal(err)
		}
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			for _, name := range l.nodes {
				if lease, err := leases.Get(ctx, name, metav1.GetOptions{}); err == nil {
					lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
					_, _ = leases.Update(ctx, lease, metav1.UpdateOptions{})
				}
			}
		}
	})
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dataplane-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	waitFor(t, "default service account", func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return ns.Name
}

// runPod creates a Pod bound to node and reports it Running and Ready
// with ip, as a kubelet would; the KCM's EndpointSlice controller then
// adds it to the Service's EndpointSlice.
func (l *testLab) runPod(name, node, ip, image string) {
	t := l.t
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Name: "web", Image: image, Ports: []v1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
	created, err := cp.Client.CoreV1().Pods(l.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No kubelet will confirm a graceful deletion, so delete at once: a
	// later test (or -count=2) may reuse the IP.
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Pods(l.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	now := metav1.Now()
	created.Status = v1.PodStatus{
		Phase: v1.PodRunning, HostIP: l.nodeIP(node), PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		},
	}
	if _, err := cp.Client.CoreV1().Pods(l.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (l *testLab) nodeIP(node string) string {
	for _, inst := range l.insts {
		if inst.PrivateDNSName == node {
			return inst.PrivateIP
		}
	}
	return ""
}

func (l *testLab) createService(policy v1.ServiceExternalTrafficPolicy) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			Selector:              map[string]string{"app": "web"},
			ExternalTrafficPolicy: policy,
			Ports:                 []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	created, err := cp.Client.CoreV1().Services(l.ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return created
}

// createLB does what the Service controller does in instance mode: a load
// balancer with a listener on the NodePort and every node registered.
func (l *testLab) createLB(name string, svc *v1.Service) cloud.LoadBalancer {
	t := l.t
	ctx := cloud.WithCaller(context.Background(), "service-controller")
	nodePort := svc.Spec.Ports[0].NodePort
	lb, err := l.cloud.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{
		Name:      name,
		Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: nodePort}},
		Tags:      map[string]string{cloud.ServiceTag: svc.Namespace + "/" + svc.Name, "kubernetes.io/cluster/ccmlab": "owned"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var targets []cloud.Target
	for _, inst := range l.insts {
		targets = append(targets, cloud.Target{ID: inst.ID, Port: nodePort})
	}
	if err := l.cloud.RegisterTargets(ctx, name, targets); err != nil {
		t.Fatal(err)
	}
	return lb
}

func (l *testLab) listenerAddr(lb string) string {
	var addr string
	waitFor(l.t, "a listener for load balancer "+lb, func(context.Context) (bool, error) {
		for _, li := range l.dp.Listeners() {
			if li.LB == lb && li.Port == 80 {
				addr = li.Address
				return true, nil
			}
		}
		return false, nil
	})
	return addr
}

// get sends a real HTTP request to addr and returns the answer and the
// trace it left.
func (l *testLab) get(addr string) (*http.Response, string, Trace) {
	t := l.t
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get(TraceHeader)
	for _, tr := range l.dp.Traces() {
		if tr.ID == id {
			// A real connection is the student's own (curl, a browser).
			if tr.Origin != OriginListener {
				t.Errorf("trace %s has origin %q, want %q", id, tr.Origin, OriginListener)
			}
			return resp, string(body), tr
		}
	}
	t.Fatalf("no trace %q for the answer %d %s", id, resp.StatusCode, body)
	return nil, "", Trace{}
}

func (l *testLab) targetHealth(lb, instID string) cloud.Target {
	for _, b := range l.cloud.Snapshot().LoadBalancers {
		if b.Name == lb {
			for _, tg := range b.Targets {
				if tg.ID == instID {
					return tg
				}
			}
		}
	}
	return cloud.Target{}
}

// TestLoadBalancerTraffic is step 6 against the real control plane: a
// Pod on node B, a load balancer targeting both nodes' NodePort, then real
// HTTP through the load balancer's listener. With Cluster, requests that
// land on node A take the extra hop and the Pod sees node A's IP; after
// switching to Local, the healthCheckNodePort check marks node A unhealthy
// in the cloud, every request goes to node B, and the Pod sees the client.
func TestLoadBalancerTraffic(t *testing.T) {
	l := newTestLab(t, "10.20.0.0/16", 20, 2)
	nodeA, nodeB := l.nodes[0], l.nodes[1]
	instA, instB := l.insts[0].ID, l.insts[1].ID
	ipA := l.insts[0].PrivateIP
	svc := l.createService(v1.ServiceExternalTrafficPolicyCluster)
	if svc.Spec.ClusterIP == "" || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("apiserver allocated no ClusterIP/NodePort: %+v", svc.Spec)
	}
	podIP := "10.244." + strings.Split(l.podCIDRof(nodeB), ".")[2] + ".7"
	l.runPod("web-0", nodeB, podIP, "ghcr.io/ccmlab/echo:1")

	// The KCM's EndpointSlice controller picks the Pod up.
	waitFor(t, "the Pod in the Service's EndpointSlice", func(ctx context.Context) (bool, error) {
		tr, err := l.dp.Do(ctx, Request{Kind: KindClusterIP, IP: svc.Spec.ClusterIP, Port: 80})
		return err == nil && tr.Status == 200, err
	})
	slices, err := cp.Client.DiscoveryV1().EndpointSlices(l.ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(slices.Items) == 0 || slices.Items[0].Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" {
		t.Fatalf("expected the KCM's EndpointSlice, got %v %v", slices, err)
	}

	traces, cancelTraces := l.dp.SubscribeTraces(64)
	defer cancelTraces()

	lb := l.createLB("aweb", svc)
	addr := l.listenerAddr(lb.Name)

	// Cluster: round-robin over both nodes; the one without the Pod
	// forwards to node B.
	var sawExtra, sawDirect bool
	for i := 0; i < 20 && !(sawExtra && sawDirect); i++ {
		resp, body, tr := l.get(addr)
		if resp.StatusCode != 200 || tr.Status != 200 {
			t.Fatalf("GET through the LB: %d %s (trace %+v)", resp.StatusCode, body, tr)
		}
		if tr.Pod != l.ns+"/web-0" || tr.PodNode != nodeB || tr.PodIP != podIP || tr.Policy != PolicyCluster || tr.LB != "aweb" || tr.Service != l.ns+"/web" {
			t.Fatalf("trace %+v", tr)
		}
		if !strings.Contains(body, "pod: web-0") || !strings.Contains(body, "node: "+nodeB) {
			t.Errorf("answer does not name the Pod and node:\n%s", body)
		}
		switch tr.EntryNode {
		case nodeA:
			sawExtra = true
			if !tr.ExtraHop || tr.SourceIPSeenByPod != ipA || hopKinds(tr) != "client,lb,node,nodeport,dnat,forward,pod" {
				t.Errorf("entry via node A: extraHop=%v source=%s hops=%s", tr.ExtraHop, tr.SourceIPSeenByPod, hopKinds(tr))
			}
			if !strings.Contains(body, "source IP seen by the Pod: "+ipA) {
				t.Errorf("Pod should see node A's IP after SNAT:\n%s", body)
			}
		case nodeB:
			sawDirect = true
			if tr.ExtraHop {
				t.Errorf("entry via node B took an extra hop: %+v", tr)
			}
		default:
			t.Fatalf("entry node %q", tr.EntryNode)
		}
		select {
		case got := <-traces:
			if got.ID != tr.ID {
				t.Errorf("subscriber got trace %s, want %s", got.ID, tr.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("subscriber got no trace")
		}
	}
	if !sawExtra || !sawDirect {
		t.Fatalf("with Cluster, want requests entering via both nodes (via A: %v, via B: %v)", sawExtra, sawDirect)
	}

	// Local: the apiserver allocates a healthCheckNodePort; the Service
	// controller would point the health check at it.
	waitFor(t, "externalTrafficPolicy Local", func(ctx context.Context) (bool, error) {
		s, err := cp.Client.CoreV1().Services(l.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		svc, err = cp.Client.CoreV1().Services(l.ns).Update(ctx, s, metav1.UpdateOptions{})
		return err == nil, err
	})
	if svc.Spec.HealthCheckNodePort == 0 {
		t.Fatal("no healthCheckNodePort allocated")
	}
	if err := l.cloud.ConfigureHealthCheck(cloud.WithCaller(context.Background(), "service-controller"), "aweb",
		cloud.HealthCheck{Protocol: "HTTP", Port: svc.Spec.HealthCheckNodePort, Path: "/healthz"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node A unhealthy and node B healthy in the cloud", func(context.Context) (bool, error) {
		a, b := l.targetHealth("aweb", instA), l.targetHealth("aweb", instB)
		return a.Health == cloud.TargetUnhealthy && a.Reason == reasonNoLocalEndpoints && b.Health == cloud.TargetHealthy,
			fmt.Errorf("node A %s (%s), node B %s (%s)", a.Health, a.Reason, b.Health, b.Reason)
	})
	if a, err := l.dp.HealthCheckNodePort(nodeA, svc.Spec.HealthCheckNodePort); err != nil || a.Status != 503 || a.LocalEndpoints != 0 {
		t.Errorf("healthCheckNodePort on node A: %+v %v", a, err)
	}
	for range 4 {
		resp, body, tr := l.get(addr)
		if resp.StatusCode != 200 || tr.EntryNode != nodeB || tr.ExtraHop || tr.Policy != PolicyLocal {
			t.Fatalf("with Local: %d entry=%s extraHop=%v policy=%s\n%s", resp.StatusCode, tr.EntryNode, tr.ExtraHop, tr.Policy, body)
		}
		if tr.SourceIPSeenByPod != tr.ClientIP || tr.ClientIP != "127.0.0.1" || !strings.Contains(body, "source IP seen by the Pod: 127.0.0.1") {
			t.Errorf("with Local the Pod should see the client: trace client=%s seen=%s\n%s", tr.ClientIP, tr.SourceIPSeenByPod, body)
		}
	}
	// A simulated request that enters on node A's NodePort is dropped.
	tr, err := l.dp.Do(context.Background(), Request{Kind: KindNodePort, Node: nodeA, Port: svc.Spec.Ports[0].NodePort})
	if err != nil || tr.Status != statusDropped || tr.ClientIP != defaultClientIP {
		t.Errorf("NodePort on node A with Local: %+v %v", tr, err)
	}

	// Deleting the load balancer closes its port.
	if err := l.cloud.DeleteLoadBalancer(cloud.WithCaller(context.Background(), "service-controller"), "aweb"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener to close", func(context.Context) (bool, error) {
		return len(l.dp.Listeners()) == 0, nil
	})
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after the load balancer was deleted", addr)
	}
}

// TestNginxAndShutdown: an nginx Pod answers like nginx through the load
// balancer, and Run closes the listeners when it returns.
func TestNginxAndShutdown(t *testing.T) {
	l := newTestLab(t, "10.30.0.0/16", 30, 1)
	svc := l.createService(v1.ServiceExternalTrafficPolicyCluster)
	podIP := "10.244." + strings.Split(l.podCIDRof(l.nodes[0]), ".")[2] + ".9"
	l.runPod("nginx-0", l.nodes[0], podIP, "nginx:1.27")
	lb := l.createLB("anginx", svc)
	addr := l.listenerAddr(lb.Name)
	waitFor(t, "nginx to answer through the load balancer", func(context.Context) (bool, error) {
		resp, body, _ := l.get(addr)
		return resp.StatusCode == 200 && resp.Header.Get("Server") == "nginx/1.27" && strings.Contains(body, "Welcome to nginx!"),
			fmt.Errorf("%d %s %.80q", resp.StatusCode, resp.Header.Get("Server"), body)
	})
	l.stop()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Run returned", addr)
	}
}

func (l *testLab) podCIDRof(node string) string {
	n, err := cp.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return n.Spec.PodCIDR
}
