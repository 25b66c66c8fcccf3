//go:build unix && !unit

package kubelet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// BenchmarkHeartbeat measures one heartbeat round (every node renews its
// Lease and checks its conditions, as each does every HeartbeatInterval)
// against the real apiserver, at 100 and 1,000 nodes. The per-node figures
// of the two sizes should be about equal: the lab's budget asks that cost
// grows linearly with nodes.
//
// cpu-ns/node-heartbeat is the CPU of the whole process (apiserver and etcd
// included, since they run in it) per node heartbeat; on a 2-core machine
// that, more than wall time, says how many nodes a lab can carry.
//
// Run it with a fixed count so both sizes do the same number of rounds:
//
//	go test -run '^$' -bench BenchmarkHeartbeat -benchtime 10x ./lab/kubelet/
func BenchmarkHeartbeat(b *testing.B) {
	for i, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchHeartbeat(b, n, fmt.Sprintf("10.%d.0.0/16", 200+i))
		})
	}
}

// benchParallelism is how many heartbeats are in flight at once: about what
// 1,000 kubelets with randomly phased 2s timers produce when each call
// takes a few milliseconds.
const benchParallelism = 16

func benchHeartbeat(b *testing.B, nodes int, vpc string) {
	cptest.Need(b)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // measure the apiserver, not client-side throttling
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := cloud.New(cloud.Config{VPCCIDR: vpc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	m, err := New(Config{
		Client: client, Cloud: c,
		// No status writes inside the measured rounds: only the Lease.
		NodeStatusInterval: time.Hour,
		Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	m.startInformers(ctx, &wg)
	b.Cleanup(func() {
		cancel()
		m.queue.ShutDown()
		wg.Wait()
		deleteNodes(b, client, c)
	})
	if !cache.WaitForCacheSync(ctx.Done(), m.podInformer.HasSynced, m.nodeInformer.HasSynced) {
		b.Fatal("informers did not sync")
	}

	// The kubelets are driven directly, without their timers, so a round
	// is exactly one heartbeat per node.
	ks := make([]*kubelet, nodes)
	userCtx := cloud.WithCaller(context.Background(), "bench")
	for i := range ks {
		inst, err := c.RunInstance(userCtx, cloud.RunInstanceInput{})
		if err != nil {
			b.Fatal(err)
		}
		ks[i] = newKubelet(m, inst)
		ks[i].bootID = fmt.Sprintf("bench-%d", i)
	}
	setup := time.Now()
	if err := forAll(ks, func(k *kubelet) error { return k.register(ctx) }); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes registered in %s", nodes, time.Since(setup).Round(time.Millisecond))
	// Registering nodes sets off the controller-manager, which at its
	// default 20 QPS needs about a second per 20 nodes to hand out
	// podCIDRs. Heartbeat (unmeasured) until that burst is over, so the
	// rounds below measure the steady state rather than a join storm.
	// Slower follow-ups (node-lifecycle relabelling, ~5 nodes/s) go on
	// for minutes at 1,000 nodes but cost little next to 1,000 Lease writes.
	round := func() error { return forAll(ks, func(k *kubelet) error { return k.heartbeat(ctx) }) }
	settle := time.Now()
	for {
		if err := round(); err != nil {
			b.Fatal(err)
		}
		if allHavePodCIDR(m, ks) {
			break
		}
		if time.Since(settle) > time.Minute {
			b.Logf("podCIDRs still being allocated after %s; measuring anyway", time.Since(settle).Round(time.Second))
			break
		}
		time.Sleep(time.Second)
	}
	b.Logf("podCIDRs allocated after %s more", time.Since(settle).Round(time.Millisecond))

	var cpu time.Duration
	rounds := 0
	for b.Loop() {
		c0 := processCPU()
		if err := round(); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
		rounds++
	}
	beats := float64(rounds * nodes)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/beats, "ns/node-heartbeat")
	b.ReportMetric(float64(cpu.Nanoseconds())/beats, "cpu-ns/node-heartbeat")
}

func allHavePodCIDR(m *Manager, ks []*kubelet) bool {
	for _, k := range ks {
		n, err := m.nodes.Get(k.name)
		if err != nil || n.Spec.PodCIDR == "" {
			return false
		}
	}
	return true
}

// forAll runs fn for every kubelet, benchParallelism at a time, and returns
// the first error.
func forAll(ks []*kubelet, fn func(*kubelet) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, benchParallelism)
	for _, k := range ks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(k); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", k.name, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// processCPU is the user+system CPU time of the whole process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
