package controllers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The flow tests share these with the provider's tests (controllers/provider).

func run(t *testing.T, c *cloud.Cloud) cloud.Instance {
	t.Helper()
	inst, err := c.RunInstance(context.Background(), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func nodeNamed(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func findLB(c *cloud.Cloud, name string) (cloud.LoadBalancer, bool) {
	for _, lb := range c.Snapshot().LoadBalancers {
		if lb.Name == name {
			return lb, true
		}
	}
	return cloud.LoadBalancer{}, false
}

// newProvider is a Provider over a fresh simulated cloud, for tests that
// drive it directly.
func newProvider(t *testing.T, profileName string) (*provider.Provider, *cloud.Cloud) {
	t.Helper()
	prof, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return provider.New(c, prof, ""), c
}

func lbSvc(uid string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}
