//go:build !unit

package exercises

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ccmlab/ccmlab/app/sim"
)

// A reset puts kube-system's add-ons back: a coredns scaled to 0 gets
// its replicas and a deleted kube-proxy DaemonSet is created again, so
// names resolve in the next exercise.
func TestResetRestoresKubeSystem(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	deps := env.Client.AppsV1().Deployments("kube-system")
	// The add-ons are applied once the apiserver serves: a test that runs
	// first waits for them.
	must(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := deps.Get(ctx, sim.CoreDNSDeployment, metav1.GetOptions{})
		return err == nil, nil
	}))
	// A merge patch of the scale, as kubectl scale sends it: no
	// resourceVersion to conflict with the Deployment controller's writes.
	_, err := deps.Patch(ctx, sim.CoreDNSDeployment, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}, "scale")
	must(t, err)
	must(t, env.Client.AppsV1().DaemonSets("kube-system").Delete(ctx, sim.KubeProxyDaemonSet, metav1.DeleteOptions{}))

	w.reset(t, "delete-finalizer")

	d, err := deps.Get(ctx, sim.CoreDNSDeployment, metav1.GetOptions{})
	must(t, err)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("coredns replicas after the reset: %v, want 2", d.Spec.Replicas)
	}
	if _, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, sim.KubeProxyDaemonSet, metav1.GetOptions{}); err != nil {
		t.Errorf("kube-proxy after the reset: %v", err)
	}
}
