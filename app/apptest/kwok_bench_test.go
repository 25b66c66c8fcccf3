//go:build !unit

package apptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/testutil"
)

// kwokNodesPerSecond is the node phase's baseline: KWOK (sigs.k8s.io/kwok,
// the kubelet simulator of Kubernetes' own scale tests), on this package's
// apiserver with the run's Lease timing, given n Nodes created at once
// from 16 clients, as the lab's kubelets register theirs; it returns how
// many per second were Ready. `make bench-scale` builds KWOK and names it
// in CCMLAB_KWOK (CCMLAB_KWOK_STAGES: the stage files its module ships);
// without it there is no baseline and the result is 0.
//
// KWOK only marks a Node Ready and renews its Lease; a lab node is also
// initialized by the CCM (an AWS DescribeInstances, providerID, labels,
// addresses, the taint removed) and given a route, so the comparison says
// what the lab's simulated side adds to the bare cost of a node on the
// same apiserver.
func kwokNodesPerSecond(b *testing.B, n int) float64 {
	b.Helper()
	bin := os.Getenv("CCMLAB_KWOK")
	if bin == "" {
		b.Log("CCMLAB_KWOK is not set: no KWOK baseline (make bench-scale builds it)")
		return 0
	}
	ctx, cancel := context.WithCancel(env.Ctx)
	defer cancel()
	t := timing()
	// KWOK renews at a quarter of the Lease's duration, as the kubelet.
	args := testutil.KWOKArgs(env.CP.KubeconfigPath(), int(4*t.Heartbeat/time.Second), os.Getenv("CCMLAB_KWOK_STAGES"))
	k := exec.CommandContext(ctx, bin, args...)
	var out strings.Builder
	k.Stdout, k.Stderr = &out, &out
	if err := k.Start(); err != nil {
		b.Fatalf("starting kwok: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = k.Process.Kill()
			_ = k.Wait()
		}
	}
	defer stop()
	client := env.Client
	readyAt := watchReady(ctx, b, client, "type=kwok", n)

	t0 := time.Now()
	inParallel(n, func(i int) {
		if _, err := client.CoreV1().Nodes().Create(ctx, testutil.KWOKNode(fmt.Sprintf("kwok-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	poll(b, 5*time.Minute, "KWOK's Nodes Ready", func() (bool, string) { return !readyAt().IsZero(), "waiting" })
	took := readyAt().Sub(t0)
	if b.Failed() {
		b.Logf("kwok output:\n%s", out.String())
	}
	stop()
	progress("KWOK: %d Nodes created and Ready in %s (%.0f/s), Lease timing %s", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), t.Name)

	// Leave the cluster as the lab's run expects it: no Nodes, no Leases.
	bg := context.Background()
	sel := metav1.ListOptions{LabelSelector: "type=kwok"}
	_ = client.CoreV1().Nodes().DeleteCollection(bg, metav1.DeleteOptions{}, sel)
	_ = client.CoordinationV1().Leases(v1.NamespaceNodeLease).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
	poll(b, time.Minute, "KWOK's Nodes deleted", func() (bool, string) {
		l, err := client.CoreV1().Nodes().List(bg, sel)
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d left", len(l.Items))
	})
	return float64(n) / took.Seconds()
}

// watchReady returns when the n-th Node matching selector was first seen
// Ready (the zero time until then), from a watch.
func watchReady(ctx context.Context, b *testing.B, client kubernetes.Interface, selector string, n int) func() time.Time {
	b.Helper()
	var mu sync.Mutex
	var at time.Time
	ready := map[string]bool{}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	see := func(obj any) {
		nd, ok := obj.(*v1.Node)
		if !ok || !kube.NodeReady(nd) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !ready[nd.Name] {
			ready[nd.Name] = true
			if len(ready) == n {
				at = time.Now()
			}
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
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}
