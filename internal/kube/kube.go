package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// NodeReady reports whether the Node's Ready condition is True. A Node
// without the condition (just registered) is not ready.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// InternalIP is the Node's first InternalIP address, or "" if it has none
// yet (the Node controller writes addresses after the kubelet registers).
func InternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// UninitializedTaint is the taint a kubelet started with
// --cloud-provider=external puts on its Node and the CCM's Node controller
// removes once the cloud has described the node.
func UninitializedTaint() corev1.Taint {
	return corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}

// HasUninitializedTaint reports whether the Node still waits for the cloud.
func HasUninitializedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}

// DropManagedFields is an informer transform (cache.TransformFunc) that
// keeps caches small: with a thousand Nodes the managed fields would be most
// of what is held, and nothing in the lab reads them.
func DropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
