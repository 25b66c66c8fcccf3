//go:build !unit

package apptest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/internal/gctune"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// BenchmarkScale is the whole simulated side (kubelets, the CCM's four
// controllers, the data plane, the flow observer) on the embedded control
// plane: n instances launched at once must join as Nodes and be
// initialized, then n LoadBalancer Services created at once must converge:
// every Service has its EXTERNAL-IP and every load balancer has all n
// nodes as healthy targets. Budgets: 1,000 x 1,000 under 120 s, nodes
// initialized at >= 100/s, cost per node and per Service flat from 100 to
// 1,000. `make bench-scale` runs 1000x1000 alone:
//
//	go test -run '^$' -bench 'Scale/1000x1000' -benchtime 1x ./app/apptest
func BenchmarkScale(b *testing.B) { benchScales(b, scaleRun) }

// benchScales runs run at 100 and 1,000 nodes x Services, as sub-benchmarks
// NxN, under the collector tuning `ccmlab serve` runs, so the figures are a
// lab's.
func benchScales(b *testing.B, run func(b *testing.B, n int)) {
	tuner, err := gctune.New(gctune.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go tuner.Run(ctx)
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("%dx%d", n, n), func(b *testing.B) {
			for range b.N {
				// The baseline first, on the same apiserver with the same
				// Lease timing, while no lab runs.
				kwok := kwokNodesPerSecond(b, n)
				run(b, n)
				b.ReportMetric(kwok, "kwok-nodes/s")
				b.ReportMetric(timing().Heartbeat.Seconds(), "lease-renew-s")
			}
		})
	}
}

func scaleRun(b *testing.B, n int) {
	cptest.Need(b)
	ctx, cancel := context.WithCancel(env.Ctx)
	defer cancel()
	runEnv := *env
	runEnv.Ctx = ctx
	prof, _ := profile.Get("aws")
	// The tuning package app gives a student's lab (app.build).
	tuning := controllers.Tuning{NodeStatusUpdateFrequency: time.Minute}
	// Room for n load balancers: past a student's quotas (cloud.ScaleQuotas).
	lab, err := Start(&runEnv, sim.Config{Profile: prof, ClusterCIDR: env.CP.ClusterCIDR(), Controllers: prof.DefaultOn, Tuning: tuning, HeartbeatInterval: timing().Heartbeat,
		CloudQuotas: cloud.ScaleQuotas(n)})
	if err != nil {
		b.Fatal(err)
	}
	rc := rest.CopyConfig(env.Config)
	rc.QPS = -1
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup(b, client, lab, cancel)

	before := apiserverRequests(ctx, client)
	registeredAt, initializedAt := watchNodes(ctx, b, client, n)
	b.ResetTimer()
	t0 := time.Now()
	for i := range n {
		if _, err := lab.Cloud.RunInstance(cloud.WithCaller(ctx, "bench"), cloud.RunInstanceInput{}); err != nil {
			b.Fatalf("instance %d: %v", i, err)
		}
	}
	progress("%d instances launched in %s", n, time.Since(t0).Round(time.Millisecond))
	poll(b, 5*time.Minute, "nodes initialized", func() (bool, string) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		ok, withID, ready := 0, 0, 0
		for i := range nodes.Items {
			nd := &nodes.Items[i]
			if nd.Spec.ProviderID != "" {
				withID++
			}
			if kube.NodeReady(nd) {
				ready++
			}
			if nodeInitialized(nd) {
				ok++
			}
		}
		return ok >= n, fmt.Sprintf("%d of %d initialized (%d registered, %d Ready, %d with providerID)", ok, n, len(nodes.Items), ready, withID)
	})
	// The poll above only reports progress (a second apart, it would round
	// a 2 s phase up by as much as half); the watch saw the moment. The
	// poll may see the last Node a moment before the watch does.
	poll(b, 30*time.Second, "the watch to see every Node initialized", func() (bool, string) { return !initializedAt().IsZero(), "" })
	nodesTook := initializedAt().Sub(t0)
	progress("all %d Nodes registered %s after the launch, all initialized %s after it", n, registeredAt().Sub(t0).Round(time.Millisecond), nodesTook.Round(time.Millisecond))
	progress("apiserver writes per node while nodes joined: %s", perUnit(apiserverRequests(ctx, client), before, n))
	before = apiserverRequests(ctx, client)
	progress("%d nodes initialized in %s", n, nodesTook.Round(time.Millisecond))

	t1 := time.Now()
	inParallel(n, func(i int) {
		if _, err := client.CoreV1().Services("default").Create(ctx, lbService(i), metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	created := time.Since(t1)
	progress("%d Services created in %s", n, created.Round(time.Millisecond))
	regTook := pollServices(b, n, t1, func() progressOf { return converged(ctx, client, lab, n) })
	svcTook := time.Since(t1)
	progress("apiserver writes per Service while Services converged: %s", perUnit(apiserverRequests(ctx, client), before, n))
	// Not time.Since(t0): the /metrics reads between the phases are the
	// benchmark's own work.
	total := nodesTook + svcTook
	b.StopTimer()

	b.ReportMetric(float64(n)/nodesTook.Seconds(), "nodes/s")
	b.ReportMetric(nodesTook.Seconds()*1000/float64(n), "ms/node")
	b.ReportMetric(regTook.Seconds()*1000/float64(n), "ms/service")
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric(total.Seconds(), "converge-s")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d nodes initialized in %s (%.0f/s); %d Services created in %s, converged %s later; whole run %s",
		n, nodesTook.Round(time.Millisecond), float64(n)/nodesTook.Seconds(), n, created.Round(time.Millisecond),
		(svcTook - created).Round(time.Millisecond), total.Round(time.Millisecond))
}

func lbService(i int) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%d", i), Namespace: "default"},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "scale"},
			Ports:    []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}},
		},
	}
}

// progressOf is one look at the Services' convergence.
type progressOf struct {
	// registered: every Service has its EXTERNAL-IP and every load
	// balancer all n nodes as targets, whatever their health. The
	// controllers' work is done then; what is left is the data plane's
	// next health round (every 2 s), a wait that does not grow with n, so
	// the cost per Service is timed to here.
	registered bool
	// healthy: every load balancer has all n targets healthy (converged).
	healthy bool
	state   string
}

// inParallel calls do(i) for every i below n from 16 goroutines: a
// cluster's clients create their objects at once, not one by one.
func inParallel(n int, do func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// pollServices polls look until every load balancer's targets are healthy
// and returns how long after t1 they were all registered, the moment the
// cost per Service is timed to (progressOf.registered).
func pollServices(b *testing.B, n int, t1 time.Time, look func() progressOf) time.Duration {
	b.Helper()
	// A look lists every Service: every 100 ms at 100, every second at
	// 1,000, so the benchmark's own reads stay a small, equal share.
	every := time.Duration(n) * time.Millisecond
	var regTook time.Duration
	pollEvery(b, 10*time.Minute, every, "services converged", func() (bool, string) {
		p := look()
		if p.registered && regTook == 0 {
			regTook = time.Since(t1)
		}
		return p.healthy, p.state
	})
	return regTook
}

// converged looks at every Service and load balancer. It reads the cloud
// through its shared views, so polling costs no copy of a million targets.
func converged(ctx context.Context, client kubernetes.Interface, lab *Lab, n int) progressOf {
	svcs, err := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: ""})
	if err != nil {
		return progressOf{state: err.Error()}
	}
	withIP := 0
	for _, s := range svcs.Items {
		if s.Spec.Type == v1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) > 0 {
			withIP++
		}
	}
	if withIP < n {
		return progressOf{state: fmt.Sprintf("%d of %d Services have an EXTERNAL-IP", withIP, n)}
	}
	var targets [][]cloud.Target
	for _, lb := range lab.Cloud.LoadBalancerViews() {
		targets = append(targets, lb.Targets)
	}
	return countTargets(targets, n, "load balancers", "targets")
}

// countTargets: how many of the load balancers have all n targets
// registered, and healthy.
func countTargets(lbs [][]cloud.Target, n int, what, targets string) progressOf {
	full, registered := 0, 0
	for _, ts := range lbs {
		if len(ts) >= n {
			registered++
		}
		healthy := 0
		for _, t := range ts {
			if t.Health == cloud.TargetHealthy {
				healthy++
			}
		}
		if healthy >= n {
			full++
		}
	}
	return progressOf{
		registered: registered >= n,
		healthy:    full >= n,
		state:      fmt.Sprintf("%d of %d %s have all %d %s registered, %d all healthy", registered, n, what, n, targets, full),
	}
}

// nodeInitialized: the Node controller has done its work on a Ready Node.
func nodeInitialized(nd *v1.Node) bool {
	return nd.Spec.ProviderID != "" && kube.NodeReady(nd) && !hasTaint(nd, cloudproviderapi.TaintExternalCloudProvider)
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// poll checks cond every second (a check of 1,000 objects is itself work
// on 2 cores) until it holds or timeout passes.
func poll(b *testing.B, timeout time.Duration, what string, cond func() (bool, string)) {
	b.Helper()
	pollEvery(b, timeout, time.Second, what, cond)
}

// pollEvery is poll with its own interval: the Services' convergence is
// timed by it (each look reads the apiserver's watch cache and the cloud's
// shared views, no copies).
func pollEvery(b *testing.B, timeout, every time.Duration, what string, cond func() (bool, string)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Since(last) >= 3*time.Second {
			progress("%s: %s", what, state)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %s: %s", what, timeout, state)
		}
		time.Sleep(every)
	}
}

// watchNodes follows Nodes through a watch and returns when the n-th was
// registered and when the n-th became initialized (providerID set, Ready,
// uninitialized taint gone); the zero time until then. Listing 1,000
// Nodes often enough to time a phase of seconds would load the apiserver
// it measures; a watch costs one event per change.
func watchNodes(ctx context.Context, b *testing.B, client kubernetes.Interface, n int) (registered, initialized func() time.Time) {
	b.Helper()
	var mu sync.Mutex
	var regAt, initAt time.Time
	seen, done := map[string]time.Time{}, map[string]bool{}
	var lat []time.Duration // registration -> initialized, per node
	f := informers.NewSharedInformerFactory(client, 0)
	see := func(obj any) {
		nd, ok := obj.(*v1.Node)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[nd.Name]; !ok {
			seen[nd.Name] = time.Now()
			if len(seen) == n {
				regAt = time.Now()
			}
		}
		if done[nd.Name] || !nodeInitialized(nd) {
			return
		}
		done[nd.Name] = true
		lat = append(lat, time.Since(seen[nd.Name]))
		if len(done) == n {
			initAt = time.Now()
			slices.Sort(lat)
			progress("a Node's registration -> initialized: p50 %s, p99 %s, max %s",
				lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		}
	}
	if _, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	at := func(t *time.Time) func() time.Time {
		return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return *t
		}
	}
	return at(&regAt), at(&initAt)
}

// cleanup stops the simulation and removes its Services, Nodes and Leases
// so that a following run starts from an empty cluster.
func cleanup(b *testing.B, client kubernetes.Interface, lab *Lab, cancel context.CancelFunc) {
	cancel()
	<-lab.done
	ctx := context.Background()
	svcs, _ := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	for _, s := range svcs.Items {
		if s.Name == "kubernetes" {
			continue
		}
		if len(s.Finalizers) > 0 {
			_, _ = client.CoreV1().Services("default").Patch(ctx, s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = client.CoreV1().Services("default").Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	_ = client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = client.CoordinationV1().Leases(v1.NamespaceNodeLease).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = lab.Close()
	poll(b, time.Minute, "cleanup", func() (bool, string) {
		n, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		s, err2 := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil || err2 != nil {
			return false, fmt.Sprint(err, err2)
		}
		return len(n.Items) == 0 && len(s.Items) <= 1, fmt.Sprintf("%d nodes, %d services left", len(n.Items), len(s.Items))
	})
}

// apiserverRequests reads the apiserver's apiserver_request_total and sums
// its write requests by verb and resource (subresource included), to show
// what a node or a Service costs the apiserver.
func apiserverRequests(ctx context.Context, client kubernetes.Interface) map[string]float64 {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += f
	}
	return out
}

// perUnit renders (after-before)/n per key, largest first.
func perUnit(after, before map[string]float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	total := 0.0
	for k, v := range after {
		if d := (v - before[k]) / float64(n); d >= 0.05 {
			list = append(list, kv{k, d})
			total += d
		}
	}
	slices.SortFunc(list, func(a, b kv) int { return cmp.Compare(b.v, a.v) })
	parts := []string{fmt.Sprintf("%.1f in all", total)}
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

// progress shows a long run's phases as they happen (b.Log prints only at
// the end).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
