//go:build !unit

package controllers

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// The latency benchmarks measure one flow per iteration against the real
// control plane with zero cloud latency. Run them with a fixed count so one
// lab serves every iteration:
//
//	go test -run '^$' -bench 'ExternalIP|NodeInit' -benchtime 20x ./controllers/
//	go test -run '^$' -bench 'Converge' -benchtime 1x ./controllers/

// BenchmarkServiceExternalIP: Service created -> status.loadBalancer.ingress
// seen on a watch (what `kubectl get svc -w` shows as EXTERNAL-IP).
func BenchmarkServiceExternalIP(b *testing.B) {
	l := newLab(b, "aws", nil)
	for _, inst := range l.addNodes(3) {
		eventually(b, 15*time.Second, "node initialized", func() (bool, string) { return nodeInitialized(l, inst) })
	}
	w, err := l.client.CoreV1().Services(l.ns).Watch(l.ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("bench-%d", i)
		t0 := time.Now()
		if _, err := l.client.CoreV1().Services(l.ns).Create(l.ctx, l.lbService(name, nil), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		testutil.WaitWatch(b, w, func(e watch.Event) bool {
			s, ok := e.Object.(*v1.Service)
			return ok && s.Name == name && len(s.Status.LoadBalancer.Ingress) > 0
		})
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	testutil.ReportLatencies(b, lat)
}

// BenchmarkNodeInit: Node registered (created tainted, no providerID) ->
// initialized (providerID set, taint gone) as seen on a watch.
func BenchmarkNodeInit(b *testing.B) {
	l := newLab(b, "aws", nil)
	w, err := l.client.CoreV1().Nodes().Watch(l.ctx, metav1.ListOptions{LabelSelector: labLabel + "=" + l.id})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		inst := l.launch()
		b.StartTimer()
		t0 := time.Now()
		l.register(inst)
		testutil.WaitWatch(b, w, func(e watch.Event) bool {
			n, ok := e.Object.(*v1.Node)
			return ok && n.Name == inst.PrivateDNSName && n.Spec.ProviderID != "" && !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider)
		})
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	testutil.ReportLatencies(b, lat)
}

// BenchmarkConverge: create S LoadBalancer Services at once in a lab of N
// initialized nodes and time until every Service has its ingress and its
// load balancer has every node on its NodePort (and routes match podCIDRs).
func BenchmarkConverge(b *testing.B) {
	for _, size := range []struct{ services, nodes int }{{100, 10}, {1000, 100}} {
		b.Run(fmt.Sprintf("%dx%d", size.services, size.nodes), func(b *testing.B) {
			for range b.N {
				l := newLab(b, "aws", nil)
				insts := l.addNodes(size.nodes)
				eventually(b, 60*time.Second, "nodes initialized", func() (bool, string) {
					for _, inst := range insts {
						if ok, why := nodeInitialized(l, inst); !ok {
							return false, why
						}
					}
					return true, ""
				})
				eventually(b, 60*time.Second, "routes", func() (bool, string) { return l.converged() })
				seqBefore := lastCallSeq(l)
				t0 := time.Now()
				var wg sync.WaitGroup
				next := make(chan int)
				for range 16 {
					wg.Go(func() {
						for i := range next {
							if _, err := l.client.CoreV1().Services(l.ns).Create(l.ctx, l.lbService(fmt.Sprintf("svc-%d", i), nil), metav1.CreateOptions{}); err != nil {
								b.Error(err)
							}
						}
					})
				}
				for i := range size.services {
					next <- i
				}
				close(next)
				wg.Wait()
				created := time.Since(t0)
				// Poll gently: a check of 1,000 Services is itself work on 2 cores.
				for ok, why := l.converged(); !ok; ok, why = l.converged() {
					if time.Since(t0) > 10*time.Minute {
						b.Fatalf("not converged after 10m: %s", why)
					}
					time.Sleep(250 * time.Millisecond)
				}
				took := time.Since(t0)
				b.ReportMetric(took.Seconds(), "converge-s")
				b.ReportMetric(created.Seconds(), "create-s")
				b.ReportMetric(float64(lastCallSeq(l)-seqBefore), "cloud-calls")
				// Per-Service figures make "grows linearly" readable
				// across the sizes: equal per-Service cost is linear.
				b.ReportMetric(took.Seconds()*1000/float64(size.services), "ms/service")
				b.ReportMetric(float64(lastCallSeq(l)-seqBefore)/float64(size.services), "calls/service")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

func lastCallSeq(l *lab) uint64 {
	calls := l.cloud.Calls(0)
	if len(calls) == 0 {
		return 0
	}
	return calls[len(calls)-1].Seq
}
