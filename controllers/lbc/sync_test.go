package lbc

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// TestSyncOnFakeClientset runs the controller's sync, as a worker runs it,
// against a fake clientset and the lab's AWS API in process: it patches
// its finalizer in, deploys, patches the NLB's DNS name into the status,
// and when the Service leaves its class it deletes the load balancer and
// patches the finalizer out. No control plane: the fast tier runs it.
func TestSyncOnFakeClientset(t *testing.T) {
	s := svc("shop", "web", "uid-9", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080})
	w := newWorld(t, true, s)
	rec := record.NewFakeRecorder(20)
	w.c.recorder = rec
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.c.synced...) {
		t.Fatal("caches did not sync")
	}
	services := w.client.CoreV1().Services("shop")
	// waitCached waits until the informer holds what cond wants, as a
	// worker would see it on its next sync.
	waitCached := func(what string, cond func(*v1.Service) bool) {
		t.Helper()
		for {
			got, err := w.c.services.Services("shop").Get("web")
			if err == nil && cond(got) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the cache never showed %s: %+v", what, got)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	key := cache.NewObjectName("shop", "web")

	// First sync: the finalizer, by a patch (the fake tracker keeps what
	// was patched), and the load balancer with its DNS name in the status.
	if err := w.c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, Finalizer) {
		t.Errorf("finalizers %v, want %s", got.Finalizers, Finalizer)
	}
	lb, ok := w.cloud.LookupLoadBalancer(LoadBalancerName(s))
	if !ok {
		t.Fatal("no NLB after the sync")
	}
	if len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].Hostname != lb.DNSName {
		t.Errorf("status %+v, want the NLB's DNS name %s", got.Status.LoadBalancer.Ingress, lb.DNSName)
	}
	var patches int
	for _, a := range w.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "services" {
			t.Errorf("an update of the Service (%s): the controller patches, as upstream's Service controller does", a.GetSubresource())
		}
		if a.GetVerb() == "patch" && a.GetResource().Resource == "services" {
			patches++
		}
	}
	if patches != 2 {
		t.Errorf("%d patches of the Service, want 2 (the finalizer, the status)", patches)
	}
	select {
	case e := <-rec.Events:
		if e != "Normal "+ReasonReconciled+" Successfully reconciled" {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}

	// The Service leaves the class: the load balancer goes, then the
	// finalizer.
	waitCached("the finalizer and the status", func(c *v1.Service) bool {
		return slices.Contains(c.Finalizers, Finalizer) && len(c.Status.LoadBalancer.Ingress) == 1
	})
	moved := got.DeepCopy()
	moved.Spec.LoadBalancerClass = ptr.To("example.com/other")
	if _, err := services.Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached("the other class", func(c *v1.Service) bool {
		return c.Spec.LoadBalancerClass != nil && *c.Spec.LoadBalancerClass != LoadBalancerClass
	})
	if err := w.c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.cloud.LookupLoadBalancer(LoadBalancerName(s)); ok {
		t.Error("the NLB outlived the Service's move to another class")
	}
	got, err = services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Finalizers, Finalizer) {
		t.Errorf("finalizers %v after the cleanup", got.Finalizers)
	}
}
