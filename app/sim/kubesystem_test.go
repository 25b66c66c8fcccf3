package sim

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/profile"
)

func TestDNSIP(t *testing.T) {
	for _, tc := range []struct {
		kubernetes, want string
		fails            bool
	}{
		{"10.96.0.1", "10.96.0.10", false},
		{"172.20.0.1", "172.20.0.10", false},
		{"fd00::1", "", true},
		{"10.96.0.250", "", true},
		{"nope", "", true},
	} {
		t.Run(tc.kubernetes, func(t *testing.T) {
			got, err := DNSIP(tc.kubernetes)
			if (err != nil) != tc.fails || got != tc.want {
				t.Errorf("DNSIP(%s) = %q, %v; want %q (fails %v)", tc.kubernetes, got, err, tc.want, tc.fails)
			}
		})
	}
}

func tolerates(spec v1.PodSpec, taint v1.Taint) bool {
	return slices.ContainsFunc(spec.Tolerations, func(tl v1.Toleration) bool { return tl.ToleratesTaint(klog.Background(), &taint, false) })
}

// TestKubeSystemObjects: the add-ons per profile, with kubeadm's
// placement rules: CoreDNS waits for an initialized node (it does not
// tolerate the CCM's taint) but may use the control-plane node;
// kube-proxy and aws-node run everywhere.
func TestKubeSystemObjects(t *testing.T) {
	controlPlane := v1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		profile    string
		daemonSets []string
	}{
		{"aws", []string{KubeProxyDaemonSet}},
		{"kubevirt", []string{KubeProxyDaemonSet}},
		{"ip", []string{KubeProxyDaemonSet}},
		{"vpc-cni", []string{KubeProxyDaemonSet, AWSNodeDaemonSet}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := profile.Get(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			ks := kubeSystemObjects(kubeSystemInput{profile: p, dnsIP: "10.96.0.10", clusterCIDR: "10.244.0.0/16", apiServer: "https://127.0.0.1:6443", region: "ap-northeast-1"})
			var names []string
			for _, ds := range ks.daemonSets {
				names = append(names, ds.Name)
				if !tolerates(ds.Spec.Template.Spec, kube.UninitializedTaint()) || !tolerates(ds.Spec.Template.Spec, controlPlane) {
					t.Errorf("DaemonSet %s does not run on every node", ds.Name)
				}
			}
			if !slices.Equal(names, tc.daemonSets) {
				t.Errorf("DaemonSets %v, want %v", names, tc.daemonSets)
			}
			if len(ks.deployments) != 1 || ks.deployments[0].Name != CoreDNSDeployment {
				t.Fatalf("deployments %v, want coredns", ks.deployments)
			}
			d := ks.deployments[0]
			spec := d.Spec.Template.Spec
			if *d.Spec.Replicas != 2 || spec.Containers[0].Image != "registry.k8s.io/coredns/coredns:v1.14.6" || spec.PriorityClassName != "system-cluster-critical" {
				t.Errorf("coredns: %d replicas, image %s, priority %s", *d.Spec.Replicas, spec.Containers[0].Image, spec.PriorityClassName)
			}
			if tolerates(spec, kube.UninitializedTaint()) || !tolerates(spec, controlPlane) {
				t.Error("coredns must wait for the CCM (no uninitialized toleration) and may run on the control-plane node")
			}
			if len(ks.services) != 1 || ks.services[0].Spec.ClusterIP != "10.96.0.10" || ks.services[0].Name != DNSService {
				t.Errorf("services %v, want kube-dns at 10.96.0.10", ks.services)
			}
		})
	}
}

// TestCreateMissingLeavesEdits: what exists stays as the student left
// it; only what is missing is created, with kubeadm as its manager.
func TestCreateMissingLeavesEdits(t *testing.T) {
	p, _ := profile.Get("aws")
	ks := kubeSystemObjects(kubeSystemInput{profile: p, dnsIP: "10.96.0.10", clusterCIDR: "10.244.0.0/16"})
	edited := ks.deployments[0].DeepCopy()
	edited.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/coredns/coredns:v1.11.1"
	c := fake.NewClientset(edited)
	ctx := context.Background()
	if err := createMissing(ctx, c, ks); err != nil {
		t.Fatal(err)
	}
	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, CoreDNSDeployment, metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "registry.k8s.io/coredns/coredns:v1.11.1" {
		t.Errorf("the edited coredns was replaced: %v %v", d, err)
	}
	if _, err := c.AppsV1().DaemonSets("kube-system").Get(ctx, KubeProxyDaemonSet, metav1.GetOptions{}); err != nil {
		t.Errorf("kube-proxy was not created: %v", err)
	}
	if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		t.Errorf("the coredns ConfigMap was not created: %v", err)
	}
}
