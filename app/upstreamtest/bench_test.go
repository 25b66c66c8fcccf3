//go:build !unit

package upstreamtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// The latency budgets with the real provider: the lab `ccmlab serve`
// builds (the aws profile's CCM is k8s.io/cloud-provider-aws in its
// DaemonSet Pod, talking the AWS query protocol to the lab's AWS API),
// with no cloud latency. One lab serves both benchmarks and every
// iteration (a second lab would be a second CCM on this control plane):
//
//	go test -run '^$' -bench 'Upstream' -benchtime 20x ./app/upstreamtest

var (
	benchOnce sync.Once
	benchLab  *apptest.Lab
	benchErr  error
)

func benchServe(b *testing.B) *apptest.Lab {
	b.Helper()
	cptest.Need(b)
	benchOnce.Do(func() {
		l := sim.DefaultLab()
		var up *apptest.Upstream
		benchLab, up, benchErr = apptest.ServeUpstream(env, l)
		if benchErr == nil {
			go func() {
				<-env.Ctx.Done()
				if hits := up.Tripwire.Hits(); len(hits) > 0 {
					panic(fmt.Sprintf("requests reached the tripwire (they would have gone to AWS): %v", hits))
				}
			}()
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchLab
}

// BenchmarkUpstreamServiceExternalIP: a LoadBalancer Service created ->
// its status.loadBalancer.ingress seen on a watch (EXTERNAL-IP in
// `kubectl get svc -w`), the Classic ELB made by cloud-provider-aws.
func BenchmarkUpstreamServiceExternalIP(b *testing.B) {
	benchServe(b)
	ctx := env.Ctx
	svcs := env.Client.CoreV1().Services("default")
	w, err := svcs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var lat []time.Duration
	var names []string
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("bench-%d-%d", b.N, i)
		svc := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}},
		}
		t0 := time.Now()
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
		testutil.WaitWatch(b, w, func(e watch.Event) bool {
			s, ok := e.Object.(*v1.Service)
			return ok && s.Name == name && len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].Hostname != ""
		})
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	testutil.ReportLatencies(b, lat)
	for _, n := range names {
		_ = svcs.Delete(context.Background(), n, metav1.DeleteOptions{})
	}
}

// BenchmarkUpstreamNodeInit: a Node registered by its kubelet (tainted
// uninitialized, no providerID) -> initialized by cloud-provider-aws's
// InstancesV2 (providerID set, taint gone), both seen on a watch.
func BenchmarkUpstreamNodeInit(b *testing.B) {
	lab := benchServe(b)
	ctx := env.Ctx
	w, err := env.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		inst, err := lab.Cloud.RunInstance(cloud.WithCaller(ctx, "bench"), cloud.RunInstanceInput{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var registered time.Time
		testutil.WaitWatch(b, w, func(e watch.Event) bool {
			n, ok := e.Object.(*v1.Node)
			if !ok || n.Name != inst.PrivateDNSName {
				return false
			}
			if registered.IsZero() {
				registered = time.Now()
			}
			return n.Spec.ProviderID != "" && !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider)
		})
		lat = append(lat, time.Since(registered))
	}
	b.StopTimer()
	testutil.ReportLatencies(b, lat)
}

func hasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}
