package sim

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/profile"
)

// Only a Pod of the CCM's DaemonSet runs a CCM: in kube-system, controlled
// by that DaemonSet, with its UID. (On a cluster the garbage collector
// deletes a Pod whose owner's UID does not exist, and the DaemonSet
// controller releases or deletes a Pod it did not make, but not before the
// kubelet may have started it.)
func TestOnlyTheDaemonSetsPodRunsACCM(t *testing.T) {
	p, _ := profile.Get("aws")
	name := CCMDaemonSetName(p)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, UID: "ds-uid"}}
	s := &Sim{Client: fake.NewClientset(ds), cfg: Config{Profile: p}}
	owner := func(kind, n string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: n, UID: uid, Controller: ptr.To(true)}}
	}
	for _, tc := range []struct {
		name, ns string
		owners   []metav1.OwnerReference
		want     string // "" runs
	}{
		{"the DaemonSet's", metav1.NamespaceSystem, owner("DaemonSet", name, "ds-uid"), ""},
		{"in default", "default", owner("DaemonSet", name, "ds-uid"), "is not one of its Pods"},
		{"no owner", metav1.NamespaceSystem, nil, "is not one of its Pods"},
		{"another DaemonSet", metav1.NamespaceSystem, owner("DaemonSet", "my-ccm", "x"), "is not one of its Pods"},
		{"a ReplicaSet", metav1.NamespaceSystem, owner("ReplicaSet", name, "ds-uid"), "is not one of its Pods"},
		{"not controller", metav1.NamespaceSystem, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: "ds-uid"}}, "is not one of its Pods"},
		{"forged UID", metav1.NamespaceSystem, owner("DaemonSet", name, "forged"), "names it as its owner with another UID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ccm", Namespace: tc.ns, OwnerReferences: tc.owners}}
			err := s.checkCCMPod(context.Background(), pod)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "only as a Pod of DaemonSet kube-system/"+name)):
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			rt := ccmRuntime{s: s}
			ccmLog := rt.LogKey(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: metav1.NamespaceSystem, OwnerReferences: owner("DaemonSet", name, "ds-uid")}}, "c")
			got := rt.LogKey(pod, "c") == ccmLog
			if want := tc.ns == metav1.NamespaceSystem && tc.want != "is not one of its Pods"; got != want {
				t.Errorf("shares the CCM's log: %t, want %t", got, want)
			}
		})
	}
}
