package flow

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// The nodes the flow counts as load balancer backends are upstream's
// stable node set (cloud-provider v0.37 stableNodeSetPredicates): not
// deleted, not exclude-labelled, not ToBeDeleted-tainted. Readiness and
// initialization do not matter.
func TestInLBNodeSet(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Node)
		in   bool
	}{
		{"plain", func(*corev1.Node) {}, true},
		{"NotReady and uninitialized", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
			n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"exclude label", func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: ""} }, false},
		{"exclude label true", func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: "true"} }, false},
		{"exclude label false", func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: "false"} }, true},
		{"ToBeDeleted taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
		}, false},
		{"being deleted", func(n *corev1.Node) { n.DeletionTimestamp = &now }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
			tc.mod(n)
			if got := NewNodeView(n).InLBNodeSet(); got != tc.in {
				t.Fatalf("InLBNodeSet = %v, want %v", got, tc.in)
			}
		})
	}
}

// TestNodeViewTaintMeaning: the view says which taint is which, so the page
// holds no taint key of its own; any value or effect of the uninitialized
// taint still counts (the Node controller removes it by key).
func TestNodeViewTaintMeaning(t *testing.T) {
	taint := func(key, value string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: effect}
	}
	tests := []struct {
		name                    string
		taints                  []corev1.Taint
		uninitialized, shutdown string
		controlPlane            bool
	}{
		{"none", nil, "", "", false},
		{"as the kubelet registers", []corev1.Taint{taint(cloudproviderapi.TaintExternalCloudProvider, "true", corev1.TaintEffectNoSchedule)}, UninitializedTaint, "", false},
		{"another value and effect", []corev1.Taint{taint(cloudproviderapi.TaintExternalCloudProvider, "", corev1.TaintEffectNoExecute)}, cloudproviderapi.TaintExternalCloudProvider + ":NoExecute", "", false},
		{"a longer key is another taint", []corev1.Taint{taint(cloudproviderapi.TaintExternalCloudProvider+"-not", "true", corev1.TaintEffectNoSchedule)}, "", "", false},
		{"shut down", []corev1.Taint{taint(cloudproviderapi.TaintNodeShutdown, "", corev1.TaintEffectNoSchedule)}, "", cloudproviderapi.TaintNodeShutdown + ":NoSchedule", false},
		{"control plane", []corev1.Taint{taint(TaintControlPlane, "", corev1.TaintEffectNoSchedule)}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tt.taints}}
			v := NewNodeView(n)
			if v.Uninitialized != tt.uninitialized || v.Shutdown != tt.shutdown || v.ControlPlane != tt.controlPlane {
				t.Errorf("view = {uninitialized %q, shutdown %q, controlPlane %v}, want {%q, %q, %v}", v.Uninitialized, v.Shutdown, v.ControlPlane, tt.uninitialized, tt.shutdown, tt.controlPlane)
			}
			if v.Tainted() != (tt.uninitialized != "") {
				t.Errorf("Tainted() = %v", v.Tainted())
			}
		})
	}
}
