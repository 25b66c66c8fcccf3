//go:build !unit

package lbctest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// BenchmarkLBC: issue 40 item 5's budgets for the real AWS Load Balancer
// Controller, on one `--addons lbc --profile vpc-cni` lab (one per test
// process: labs share the package's control plane).
//
//   - hostname: kubectl apply of a plain LoadBalancer Service (the webhook
//     stamps service.k8s.aws/nlb) to the NLB's DNS name in its status;
//     p50 and p99 over b.N Services, each deleted (and gone) before the
//     next. Budget: p50 <= 2 s.
//   - idle: the private memory (RssAnon of this process) the controller
//     holds while idle: measured with its Pod running, then with its
//     Deployment scaled to 0 (the process ends, its caches go), each after
//     settling and a forced GC that returns freed memory to the OS.
//     Budget: <= 40 MB. The binary's own BenchmarkIdle compares whole
//     processes; this isolates the add-on inside one.
func BenchmarkLBC(b *testing.B) {
	cptest.Need(b)
	p, err := profile.Get("vpc-cni")
	if err != nil {
		b.Fatal(err)
	}
	l := sim.DefaultLab()
	l.Profile, l.Addons = p, []string{"lbc"}
	l.Controllers, _ = p.ParseControllers("")
	l.AWSProvider = ""
	lab, err := apptest.Serve(env, l)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(env.Ctx, 15*time.Minute)
	defer cancel()
	c := lab.Client
	if err := pollUntil(ctx, func() bool {
		d, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, sim.LBCName, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 1
	}); err != nil {
		b.Fatalf("the controller's Deployment is not ready: %v", err)
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, web(), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}

	b.Run("hostname", func(b *testing.B) {
		var took []time.Duration
		for i := range b.N {
			name := fmt.Sprintf("bench-%d", i)
			start := time.Now()
			if _, err := c.CoreV1().Services("default").Create(ctx, lbService(name, nil), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := pollUntil(ctx, func() bool {
				s, err := c.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
				return err == nil && len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].Hostname != ""
			}); err != nil {
				b.Fatalf("Service %s: no hostname: %v", name, err)
			}
			took = append(took, time.Since(start))
			b.StopTimer()
			if err := c.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := pollUntil(ctx, func() bool {
				_, err := c.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
				return err != nil
			}); err != nil {
				b.Fatalf("Service %s not gone: %v", name, err)
			}
			b.StartTimer()
		}
		slices.Sort(took)
		b.ReportMetric(ms(pct(took, 50)), "p50-ms")
		b.ReportMetric(ms(pct(took, 99)), "p99-ms")
		b.ReportMetric(0, "ns/op")
	})

	b.Run("idle", func(b *testing.B) {
		for range b.N {
			with, gWith := idleAnonMB(), runtime.NumGoroutine()
			scale(b, ctx, lab, 0)
			without, gWithout := idleAnonMB(), runtime.NumGoroutine()
			scale(b, ctx, lab, 1)
			b.ReportMetric(with-without, "idle-anon-lbc-MB")
			b.ReportMetric(with, "idle-anon-MB")
			b.ReportMetric(0, "ns/op")
			// The goroutines show the controller's process really ended.
			b.ReportMetric(float64(gWith-gWithout), "lbc-goroutines")
			b.Logf("RssAnon idle with the controller %.1f MB (%d goroutines), without %.1f MB (%d): the controller holds %.1f MB", with, gWith, without, gWithout, with-without)
		}
	})
}

// settle is how long the lab is left alone before memory is read: the
// controller's start-up and first resyncs are over by then.
const settle = 30 * time.Second

// idleAnonMB is this process's private resident memory after settle and a
// GC that returns what it freed.
func idleAnonMB() float64 {
	time.Sleep(settle)
	runtime.GC()
	debug.FreeOSMemory()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssAnon:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// scale sets the controller's Deployment to n replicas and waits until that
// many of its Pods exist (and, for 1, the Deployment is ready again).
func scale(b *testing.B, ctx context.Context, lab *apptest.Lab, n int32) {
	b.Helper()
	c := lab.Client
	// A merge patch of the scale, as kubectl scale sends it: no
	// resourceVersion to conflict with the Deployment controller's writes.
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, sim.LBCName, types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		b.Fatal(err)
	}
	if err := pollUntil(ctx, func() bool {
		pods, err := c.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + sim.LBCName})
		if err != nil || len(pods.Items) != int(n) {
			return false
		}
		d, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, sim.LBCName, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == n
	}); err != nil {
		b.Fatalf("scaling the controller to %d: %v", n, err)
	}
}

func pollUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
