package check

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ccmlab/ccmlab/exercises/format"
)

const testHolder = "kubevirt-cloud-controller-manager-7d9c8b6f5-x2k4p_0b7e5f1c-3a2d-4c1e-9f60-2d5b8e7a1c34"

func ccmLease(ns, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: ccmLeaseName, Namespace: ns}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
}

// managementWorld is the kubevirt profile's management side: the CCM's
// Deployment (ready or not) and its Lease (held or not).
func (f *fixture) managementWorld(ready int32, holder string) {
	f.infra = []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-cloud-controller-manager", Namespace: "tenant-ab12"},
			Status: appsv1.DeploymentStatus{ReadyReplicas: ready}},
		// Another Lease of the management side, which is not the CCM's.
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "apiserver-x", Namespace: metav1.NamespaceSystem}, Spec: coordinationv1.LeaseSpec{HolderIdentity: new("apiserver-x_1")}},
	}
	if holder != "" {
		f.infra = append(f.infra, ccmLease("tenant-ab12", holder))
	}
}

func kubevirtCases() []checkCase {
	outside := format.CheckSpec{Kind: "ccmOutsideTenant"}
	return []checkCase{
		{"the CCM on the management side only", outside, func(f *fixture) { f.managementWorld(1, testHolder) }, true},
		{"no management side", outside, func(f *fixture) {}, false},
		{"no Deployment", outside, func(f *fixture) { f.infra = []runtime.Object{ccmLease("tenant-ab12", testHolder)} }, false},
		{"Deployment not ready", outside, func(f *fixture) { f.managementWorld(0, testHolder) }, false},
		{"no one holds the Lease", outside, func(f *fixture) { f.managementWorld(1, "") }, false},
		{"a CCM DaemonSet in the tenant", outside, func(f *fixture) {
			f.managementWorld(1, testHolder)
			f.objs = append(f.objs, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "aws-cloud-controller-manager", Namespace: metav1.NamespaceSystem}})
		}, false},
		{"a CCM Pod in the tenant", outside, func(f *fixture) {
			f.managementWorld(1, testHolder)
			f.objs = append(f.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-cloud-controller-manager-abcde", Namespace: metav1.NamespaceSystem}})
		}, false},
		{"a CCM Lease in the tenant", outside, func(f *fixture) {
			f.managementWorld(1, testHolder)
			f.objs = append(f.objs, ccmLease(metav1.NamespaceSystem, "ip-10-0-0-4_1"))
		}, false},
	}
}

func TestManagementLeaseHolderAnswer(t *testing.T) {
	spec := format.AnswerSpec{Kind: "managementLeaseHolder"}
	if err := ValidateAnswer(spec); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	if o := CheckAnswer(f.ctx, f.env(), Input{}, spec, testHolder); o.Pass || !o.Detail.Complete() {
		t.Errorf("without a management side: %+v", o)
	}
	f.managementWorld(1, testHolder)
	for value, right := range map[string]bool{
		testHolder:                          true,
		"kubevirt-cloud-controller-manager": false, // the Deployment's name
		"apiserver-x_1":                     false, // another Lease's holder
		"cloud-controller-manager":          false, // the Lease's name
	} {
		if o := CheckAnswer(f.ctx, f.env(), Input{}, spec, value); o.Pass != right || !o.Detail.Complete() {
			t.Errorf("%q: %+v", value, o)
		}
	}
	// The check beside the answer does not give it away.
	if o := f.eval(format.CheckSpec{Kind: "ccmOutsideTenant"}); !o.Pass || strings.Contains(o.Detail.EN+o.Detail.JA, testHolder[strings.Index(testHolder, "_"):]) {
		t.Errorf("ccmOutsideTenant names the holder: %+v", o)
	}
}
