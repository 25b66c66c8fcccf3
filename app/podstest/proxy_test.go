//go:build !unit

package podstest

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// testPodsProxy runs inside TestPodsRun (its lab, its nginx Deployment
// "web" behind Service "web"): the apiserver's pods and services proxy
// reach a Pod's server through the lab's cluster network, as
// `kubectl get --raw` and upstream's e2e DNS tests use them; a port
// nothing in the Pod listens on is refused, and an endpoint address that
// is no Pod of the lab (a Pod whose status claims one, on no node of the lab) is refused by
// the lab's allowlist.
func testPodsProxy(t *testing.T) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A Pod on a node the lab does not run, its status claiming an
	// address outside the lab: the apiserver's pods proxy dials it and
	// the lab's cluster network refuses.
	stray, err := cs.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stray"},
		Spec:       v1.PodSpec{NodeName: "not-a-lab-node", Containers: []v1.Container{{Name: "c", Image: "nginx:1.29"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stray.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "192.0.2.10", PodIPs: []v1.PodIP{{IP: "192.0.2.10"}}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, stray, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cs.CoreV1().Pods("default").Delete(context.Background(), "stray", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	web := strings.TrimSpace(must(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"))
	for _, tc := range []struct {
		name, path string
		ok         bool
		want       string // in the body, or in the error
	}{
		{"pods proxy", "/api/v1/namespaces/default/pods/" + web + ":80/proxy/", true, "<title>Welcome to nginx!</title>"},
		{"pods proxy, default port", "/api/v1/namespaces/default/pods/" + web + "/proxy/index.html", true, "<title>Welcome to nginx!</title>"},
		{"services proxy", "/api/v1/namespaces/default/services/web:80/proxy/", true, "<title>Welcome to nginx!</title>"},
		{"nothing listens", "/api/v1/namespaces/default/pods/" + web + ":8080/proxy/", false, "connection refused"},
		{"not the lab's", "/api/v1/namespaces/default/pods/stray:80/proxy/", false, "192.0.2.10:80 is not an address of this lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := cs.CoreV1().RESTClient().Get().AbsPath(tc.path).DoRaw(ctx)
			if tc.ok {
				if err != nil || !strings.Contains(string(body), tc.want) {
					t.Errorf("GET %s: %v\n%s\nwant %q", tc.path, err, body, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error()+string(body), tc.want) {
				t.Errorf("GET %s: err %v, body %s; want an error with %q", tc.path, err, body, tc.want)
			}
		})
	}
}
