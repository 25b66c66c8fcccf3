package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

func TestNodeReady(t *testing.T) {
	cases := []struct {
		name string
		cond []corev1.NodeCondition
		want bool
	}{
		{"no conditions", nil, false},
		{"ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, true},
		{"not ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, false},
		{"unknown", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}, false},
		{"other condition only", []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Conditions: c.cond}}
			if got := NodeReady(n); got != c.want {
				t.Errorf("NodeReady = %v, want %v", got, c.want)
			}
		})
	}
}

func TestInternalIP(t *testing.T) {
	cases := []struct {
		name  string
		addrs []corev1.NodeAddress
		want  string
	}{
		{"none", nil, ""},
		{"hostname only", []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "ip-10-0-1-5"}}, ""},
		{"first internal", []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: "ip-10-0-1-5"},
			{Type: corev1.NodeInternalIP, Address: "10.0.1.5"},
			{Type: corev1.NodeInternalIP, Address: "10.0.1.6"},
		}, "10.0.1.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Addresses: c.addrs}}
			if got := InternalIP(n); got != c.want {
				t.Errorf("InternalIP = %q, want %q", got, c.want)
			}
		})
	}
}

func TestUninitializedTaint(t *testing.T) {
	taint := UninitializedTaint()
	if taint.Key != cloudproviderapi.TaintExternalCloudProvider || taint.Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("UninitializedTaint = %+v", taint)
	}
	cases := []struct {
		name   string
		taints []corev1.Taint
		want   bool
	}{
		{"none", nil, false},
		{"other", []corev1.Taint{{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule}}, false},
		{"uninitialized", []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoExecute}, taint}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Taints: c.taints}}
			if got := HasUninitializedTaint(n); got != c.want {
				t.Errorf("HasUninitializedTaint = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDropManagedFields(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	got, err := DropManagedFields(n)
	if err != nil {
		t.Fatal(err)
	}
	if got.(*corev1.Node).ManagedFields != nil {
		t.Error("managed fields kept")
	}
	// Not an object (a tombstone, say): passed through unchanged.
	if got, err := DropManagedFields("x"); err != nil || got != "x" {
		t.Errorf("DropManagedFields(string) = %v, %v", got, err)
	}
}
