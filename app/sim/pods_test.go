package sim

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/profile"
)

func TestControllersFlag(t *testing.T) {
	aws, _ := profile.Get("aws")
	kubevirt, _ := profile.Get("kubevirt")
	all := map[string]bool{"node": true, "nodelifecycle": true, "route": true, "service": true}
	for _, tc := range []struct {
		name   string
		p      profile.Profile
		status map[string]bool
		want   string
	}{
		{"all on", aws, all, "*"},
		{"service off", aws, map[string]bool{"node": true, "nodelifecycle": true, "route": true}, "*,-service"},
		{"node and route off", aws, map[string]bool{"nodelifecycle": true, "service": true}, "*,-cloud-node,-route"},
		{"none", aws, nil, "*,-cloud-node,-cloud-node-lifecycle,-route,-service"},
		{"a profile without a Service controller", kubevirt, map[string]bool{"node": true, "nodelifecycle": true}, "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := controllers.ControllersFlag(tc.p, tc.status); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The CCM's DaemonSet is shaped like upstream's example, and its
// arguments are ones the CCM accepts and runs as asked.
func TestCCMDaemonSet(t *testing.T) {
	for _, name := range profile.Names() {
		t.Run(name, func(t *testing.T) {
			p, _ := profile.Get(name)
			on := map[string]bool{}
			for _, c := range p.DefaultOn {
				on[c] = true
			}
			sa, role, binding, _, ds := ccmObjects(p, "10.244.0.0/16", controllers.Tuning{ServiceWorkers: 4}, on)
			spec := ds.Spec.Template.Spec
			if spec.ServiceAccountName != sa.Name || binding.Subjects[0].Name != sa.Name || binding.RoleRef.Name != role.Name {
				t.Errorf("ServiceAccount %q, binding %+v", spec.ServiceAccountName, binding)
			}
			if _, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
				t.Errorf("nodeSelector %v", spec.NodeSelector)
			}
			if len(spec.Tolerations) != 2 || !spec.HostNetwork {
				t.Errorf("tolerations %v, hostNetwork %t", spec.Tolerations, spec.HostNetwork)
			}
			if !slices.Contains(spec.Containers[0].Args, "--cloud-provider="+p.ProviderName) {
				t.Errorf("args %v", spec.Containers[0].Args)
			}
			a, err := controllers.ParseArgs(spec.Containers[0].Args, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Enabled(p); !slices.Equal(got, p.DefaultOn) {
				t.Errorf("the CCM would run %v, want %v", got, p.DefaultOn)
			}
			if !a.LeaderElect || !a.UseServiceAccountCredentials || a.ConcurrentServiceSyncs != 4 {
				t.Errorf("parsed %+v", a)
			}
		})
	}
}

func TestAccessLog(t *testing.T) {
	store := podlog.New(0, 0)
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	log := accessLog(store, func() time.Time { return at })
	log(dataplane.Delivery{Pod: pod, Container: "nginx", Nginx: true, ClientIP: "10.0.0.4", Method: "GET", URI: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 615, UserAgent: "curl/8.5.0"})
	log(dataplane.Delivery{Pod: pod, Container: "echo", ClientIP: "203.0.113.10", Method: "GET", URI: "/x", Status: 200, Bytes: 12})
	want := map[string]string{
		"nginx": `10.0.0.4 - - [01/Dec/2026:06:00:00 +0000] "GET / HTTP/1.1" 200 615 "-" "curl/8.5.0"`,
		"echo":  "2026-12-01T06:00:00Z 203.0.113.10 GET /x 200 12",
	}
	for c, w := range want {
		lines := store.Lines(podlog.PodKey("u1", c))
		if len(lines) != 1 || lines[0].Text != w {
			t.Errorf("%s: %v, want %q", c, lines, w)
		}
	}
}
