//go:build !unit

package vpccnitest

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// TestAWSNode: on vpc-cni, aws-node runs on every node with the VPC
// CNI's start lines, and a Pod (with a VPC address) resolves a Service
// through CoreDNS.
func TestAWSNode(t *testing.T) {
	cptest.Need(t)
	ctx := context.Background()
	p, err := profile.Get("vpc-cni")
	if err != nil {
		t.Fatal(err)
	}
	l := sim.DefaultLab()
	l.Profile = p
	l.Controllers, _ = p.ParseControllers("")
	l.AWSProvider = sim.DefaultAWSProvider(p)
	l.Nodes = 2
	lab, err := apptest.Serve(env, l)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sim.AWSNodeDaemonSet, sim.KubeProxyDaemonSet} {
		testutil.Eventually(t, 2*time.Minute, name+" ready on every node", func() (bool, string) {
			ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return int(ds.Status.NumberReady) == len(nodes.Items), fmt.Sprintf("%d of %d nodes", ds.Status.NumberReady, len(nodes.Items))
		})
	}
	pods, err := env.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=aws-node"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("aws-node Pods: %v", err)
	}
	if img := pods.Items[0].Spec.Containers[0].Image; !strings.HasPrefix(img, "602401143452.dkr.ecr."+lab.Cloud.Config().Region+".amazonaws.com/amazon-k8s-cni:") {
		t.Errorf("aws-node image %s", img)
	}
	testutil.Eventually(t, time.Minute, "aws-node's start lines", func() (bool, string) {
		raw, err := env.Client.CoreV1().Pods("kube-system").GetLogs(pods.Items[0].Name, &v1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(raw), `"msg":"Foregrounding IPAM daemon ..."`), string(raw)
	})

	// A Service and a Pod that asks for it by name.
	if _, err := env.Client.CoreV1().Services("default").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *v1.Pod
	testutil.Eventually(t, 2*time.Minute, "client runs", func() (bool, string) {
		pod, err = env.Client.CoreV1().Pods("default").Get(ctx, "client", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == v1.PodRunning, fmt.Sprint(err)
	})
	vpc := netip.MustParsePrefix(lab.Cloud.Config().VPCCIDR)
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err != nil || !vpc.Contains(ip) {
		t.Errorf("Pod IP %s outside the VPC %s", pod.Status.PodIP, vpc)
	}
	svc, err := env.Client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "nslookup web through CoreDNS", func() (bool, string) {
		out, err := execIn(ctx, pod, "nslookup", "web")
		return err == nil && strings.Contains(out, "Address: "+svc.Spec.ClusterIP), fmt.Sprint(out, err)
	})
}

// execIn runs cmd in pod through the apiserver's exec (the kubelet API),
// as kubectl exec does.
func execIn(ctx context.Context, pod *v1.Pod, cmd ...string) (string, error) {
	req := env.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: pod.Spec.Containers[0].Name, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(env.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	var out strings.Builder
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	return out.String(), err
}
