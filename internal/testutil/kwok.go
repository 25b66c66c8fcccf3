package testutil

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KWOK (sigs.k8s.io/kwok) is the baseline of the per-node benchmarks: it
// manages only the Nodes that carry its annotation, so it runs beside a
// lab's own kubelets on the same apiserver.
const kwokAnnotation = "kwok.x-k8s.io/node"

// KWOKArgs are the flags the benchmarks start KWOK with: the Nodes
// KWOKNode makes, a Lease of leaseSeconds (KWOK renews at a quarter of
// it, as a kubelet does), and the stage files of KWOK's module when
// stages is not empty. KWOK logs every Lease renewal at INFO; the lab logs
// nothing at its default verbosity, so KWOK is measured quiet as well.
func KWOKArgs(kubeconfig string, leaseSeconds int, stages string) []string {
	args := []string{"--kubeconfig", kubeconfig,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=fake",
		"--node-lease-duration-seconds=" + strconv.Itoa(leaseSeconds), "--cidr=10.128.0.0/16", "--node-ip=10.128.0.1",
		"-v=ERROR"}
	if stages != "" {
		args = append(args, "--config", stages)
	}
	return args
}

// KWOKNode is a Node for KWOK to manage, labelled type=kwok.
func KWOKNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{kwokAnnotation: "fake"},
		Labels:      map[string]string{"type": "kwok"},
	}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}}}
}
