//go:build !unit

package kubevirttest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// TestSwitchesEditTheDeployment: on the kubevirt profile the page's
// switches (Manager.Disable/Enable, what PUT /api/controllers/{name}
// calls) edit the management side's CCM Deployment: its --controllers
// changes, a new ReplicaSet's Pod replaces the old one, and the CCM that
// leads is the new Pod (the Lease's holder). Its log is that Pod's, read
// with kubectl logs through the management apiserver.
func TestSwitchesEditTheDeployment(t *testing.T) {
	l := servedLab(t)
	ctx := context.Background()
	ns := l.KubevirtCluster()
	infra, err := kubernetes.NewForConfig(l.Config.Infra)
	if err != nil {
		t.Fatal(err)
	}
	infraKubeconfig := filepath.Join(env.DataDir, controlplane.InfraKubeconfigName)
	controllersFlag := func() string {
		d, err := infra.AppsV1().Deployments(ns).Get(ctx, sim.InfraCCMName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--controllers=") })
		if i < 0 {
			t.Fatalf("no --controllers in %q", d.Spec.Template.Spec.Containers[0].Args)
		}
		return d.Spec.Template.Spec.Containers[0].Args[i]
	}
	// leader is the running Pod of the Deployment once the Lease's holder
	// is it.
	leader := func(what string) string {
		t.Helper()
		var pod string
		testutil.EventuallyCtx(t, time.Minute, what, func(ctx context.Context) (bool, error) {
			pods, err := infra.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + sim.InfraCCMName})
			if err != nil || len(pods.Items) != 1 {
				return false, nil
			}
			lease, err := infra.CoordinationV1().Leases(ns).Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				return false, nil
			}
			pod = pods.Items[0].Name
			return strings.HasPrefix(*lease.Spec.HolderIdentity, pod+"_"), nil
		})
		return pod
	}
	before := leader("the CCM's Pod leads")
	if got := controllersFlag(); got != "--controllers=*" {
		t.Fatalf("at start %s, want --controllers=* (every controller of the profile)", got)
	}
	out := shell(t, "kubectl --kubeconfig "+infraKubeconfig+" -n "+ns+" logs deploy/"+sim.InfraCCMName+" --tail=50")
	if !strings.Contains(out, "node_controller.go") {
		t.Errorf("kubectl logs of the CCM's Deployment has no line of its Node controller:\n%s", out)
	}

	for _, tc := range []struct {
		enable bool
		flag   string
	}{
		{false, "--controllers=*,-cloud-node"},
		{true, "--controllers=*"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			switchNode := l.Manager.Disable
			if tc.enable {
				switchNode = l.Manager.Enable
			}
			if err := switchNode(profile.Node); err != nil {
				t.Fatal(err)
			}
			if got := controllersFlag(); got != tc.flag {
				t.Errorf("the Deployment's %s, want %s", got, tc.flag)
			}
			now := leader("a new Pod leads")
			if now == before {
				t.Errorf("the Pod %s still runs after the switch", now)
			}
			if on := l.Manager.Status()[profile.Node]; on != tc.enable {
				t.Errorf("the switch reads %v, want %v", on, tc.enable)
			}
			before = now
		})
	}
	// The old ReplicaSets stay, scaled to zero, as the Deployment
	// controller keeps them (revisionHistoryLimit).
	rss, err := infra.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + sim.InfraCCMName})
	if err != nil {
		t.Fatal(err)
	}
	up := 0
	for _, rs := range rss.Items {
		if *rs.Spec.Replicas > 0 {
			up++
		}
	}
	if len(rss.Items) != 2 || up != 1 {
		t.Errorf("%d ReplicaSets, %d scaled up: want the two templates', one up", len(rss.Items), up)
	}
}
