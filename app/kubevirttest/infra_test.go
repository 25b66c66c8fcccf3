//go:build !unit

package kubevirttest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// TestManagementAPIServer: the management side is an apiserver of its own;
// what is created there is not in the tenant.
func TestManagementAPIServer(t *testing.T) {
	cptest.Need(t)
	in := env.CP.Infra()
	if in == nil {
		t.Fatal("no management side")
	}
	t.Logf("management apiserver at %s added %d MiB of live heap", in.Server(), in.HeapBytes>>20)
	ic, err := kubernetes.NewForConfig(in.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &metav1.ObjectMeta{Name: "only-in-infra"}
	if _, err := ic.CoreV1().Namespaces().Create(ctx, nsOf(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("the tenant sees the management side's namespace")
	}
}
