//go:build !unit

package apptest

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// An exercise check reads a Pod's access log the way kubectl logs does:
// GetLogs through the apiserver, which reaches the kubelet through its
// egress proxy.
func TestPodLogsThroughTheAPIServer(t *testing.T) {
	cptest.Need(t)
	p, _ := profile.Get("aws")
	l, err := Start(env, sim.Config{Profile: p, Nodes: 1, Controllers: p.DefaultOn, ClusterCIDR: env.CP.ClusterCIDR()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	labels := map[string]string{"app": "logs"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "logs"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					Containers:  []v1.Container{{Name: "nginx", Image: "nginx:1.29", Ports: []v1.ContainerPort{{ContainerPort: 80}}}},
					Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
				},
			},
		},
	}
	if _, err := env.Client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "logs"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Selector: labels, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal,
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}},
	}
	created, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Services("default").Delete(ctx, "logs", metav1.DeleteOptions{})
		_ = env.Client.AppsV1().Deployments("default").Delete(ctx, "logs", metav1.DeleteOptions{})
	})
	nodePort := created.Spec.Ports[0].NodePort
	var podName string
	testutil.Eventually(t, time.Minute, "a request to the NodePort reaching the Pod", func() (bool, string) {
		pods, _ := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=logs"})
		if len(pods.Items) == 0 || pods.Items[0].Status.PodIP == "" {
			return false, "no Pod running yet"
		}
		podName = pods.Items[0].Name
		tr, err := l.Dataplane.Do(ctx, dataplane.Request{Kind: dataplane.KindNodePort, Node: pods.Items[0].Spec.NodeName, Port: nodePort, ClientIP: "198.51.100.9"})
		return err == nil && tr.Status == 200, tr.Error
	})
	testutil.Eventually(t, time.Minute, "the access log through GetLogs", func() (bool, string) {
		raw, err := env.Client.CoreV1().Pods("default").GetLogs(podName, &v1.PodLogOptions{TailLines: ptr.To[int64](1)}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(string(raw), "198.51.100.9 - - ["), string(raw)
	})
}
