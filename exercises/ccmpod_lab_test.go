//go:build !unit

package exercises

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The ccm-toleration lesson on the served lab (the CCM as its DaemonSet's
// Pod on the control-plane node): with the Node controller off (as before
// any CCM ran), a tainted control plane and the toleration dropped leave
// DESIRED 0 and no CCM; the toleration back and the Node controller on,
// the new Pod's CCM removes the taint. A reset after the deadlock puts the
// toleration back and the lab runs again.
func TestExerciseCCMToleration(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	const id = "ccm-toleration"
	w.reset(t, id)
	w.expectFailFirst(t, id)
	cpTainted := func() bool {
		l, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: check.LabelControlPlane})
		if err != nil || len(l.Items) == 0 {
			t.Fatalf("control-plane node: %v", err)
		}
		return kube.HasUninitializedTaint(&l.Items[0])
	}

	// The taint put on while the Node controller runs: it is gone again
	// at once, and nothing is stuck.
	w.failsNow(t, id, "deadlock")
	w.run(t, id, "deadlock", "kubectl taint")
	testutil.Eventually(t, 60*time.Second, "the running CCM removes the taint", func() (bool, string) { return !cpTainted(), "tainted" })
	w.failsNow(t, id, "deadlock")

	must(t, w.manager.Disable(profile.Node))
	w.run(t, id, "deadlock", "kubectl taint")
	w.failsNow(t, id, "deadlock") // the toleration is still there
	w.run(t, id, "deadlock", "--type=merge")
	w.waitStep(t, id, "deadlock", 90*time.Second)
	if got := w.manager.Identity(); got != "" {
		t.Errorf("a CCM leads in the deadlock: %q", got)
	}
	if !cpTainted() {
		t.Error("the control-plane node lost its taint with no CCM")
	}

	w.failsNow(t, id, "way-out")
	w.run(t, id, "way-out", "--type=merge")
	testutil.Eventually(t, 90*time.Second, "a CCM leads with the toleration back", func() (bool, string) { return w.manager.Identity() != "", "none" })
	w.failsNow(t, id, "way-out") // the Node controller is still off
	must(t, w.manager.Enable(profile.Node))
	w.waitStep(t, id, "way-out", 120*time.Second)
	w.expectDone(t, id)

	// The deadlock again, left for the reset to undo.
	must(t, w.manager.Disable(profile.Node))
	w.run(t, id, "deadlock", "kubectl taint")
	w.run(t, id, "deadlock", "--type=merge")
	testutil.Eventually(t, 90*time.Second, "no CCM leads", func() (bool, string) { return w.manager.Identity() == "", "a CCM leads" })
	w.reset(t, id)
	testutil.Eventually(t, 120*time.Second, "a CCM leads and the control plane is initialized", func() (bool, string) {
		return w.manager.Identity() != "" && !cpTainted(), "not yet"
	})
}
