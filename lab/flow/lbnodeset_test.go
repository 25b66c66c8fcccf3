package flow

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
