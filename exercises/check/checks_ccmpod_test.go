package check

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
)

// ccmWorld adds the CCM DaemonSet (tolerating the uninitialized taint or
// not, wanting and running desired Pods) and the control-plane Node
// (tainted or not).
func (f *fixture) ccmWorld(tolerates bool, desired, ready int32, tainted bool) {
	var tols []corev1.Toleration
	if tolerates {
		t := kube.UninitializedTaint()
		tols = append(tols, corev1.Toleration{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	tols = append(tols, corev1.Toleration{Key: LabelControlPlane, Effect: corev1.TaintEffectNoSchedule})
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "aws-cloud-controller-manager", Namespace: metav1.NamespaceSystem, Generation: 2},
		Spec:   appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: tols}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: desired, NumberReady: ready}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{LabelControlPlane: ""}}}
	if tainted {
		node.Spec.Taints = []corev1.Taint{kube.UninitializedTaint()}
	}
	f.objs = append(f.objs, ds, node)
}

func ccmpodCases() []checkCase {
	stranded := format.CheckSpec{Kind: "ccmDaemonSet", State: "stranded"}
	running := format.CheckSpec{Kind: "ccmDaemonSet", State: "running"}
	return []checkCase{
		{"stranded: no toleration, tainted, DESIRED 0", stranded, func(f *fixture) { f.ccmWorld(false, 0, 0, true) }, true},
		{"still tolerates", stranded, func(f *fixture) { f.ccmWorld(true, 0, 0, true) }, false},
		{"no taint on the control plane", stranded, func(f *fixture) { f.ccmWorld(false, 0, 0, false) }, false},
		{"the old Pod still wanted", stranded, func(f *fixture) { f.ccmWorld(false, 1, 1, true) }, false},
		{"no DaemonSet", stranded, func(f *fixture) {}, false},
		{"running and initialized", running, func(f *fixture) { f.ccmWorld(true, 1, 1, false) }, true},
		{"toleration back, Pod not ready", running, func(f *fixture) { f.ccmWorld(true, 1, 0, true) }, false},
		{"running, taint not removed yet", running, func(f *fixture) { f.ccmWorld(true, 1, 1, true) }, false},
		{"no toleration", running, func(f *fixture) { f.ccmWorld(false, 1, 1, false) }, false},
	}
}

func TestControlPlaneNodeAnswer(t *testing.T) {
	f := newFixture(t)
	f.ccmWorld(true, 1, 1, false)
	spec := format.AnswerSpec{Kind: "controlPlaneNode"}
	if err := ValidateAnswer(spec); err != nil {
		t.Fatal(err)
	}
	for value, right := range map[string]bool{"cp": true, "ip-10-0-0-4": false} {
		if o := CheckAnswer(f.ctx, f.env(), Input{}, spec, value); o.Pass != right || !o.Detail.Complete() {
			t.Errorf("%q: %+v", value, o)
		}
	}
}
