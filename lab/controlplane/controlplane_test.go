//go:build !unit

package controlplane_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

var env *cptest.Env

// disk is the free space the control plane sees on its data dir.
var disk fakeDisk

func TestMain(m *testing.M) {
	cptest.Main(m, &env, func(c *controlplane.Config) {
		// Small enough for TestEtcdQuotaIsAnAnswer to fill in a few dozen
		// writes; the apiserver's bootstrap takes a few MiB.
		c.EtcdQuotaBytes = testQuota
		c.EtcdSpaceCheck = 100 * time.Millisecond
		controlplane.SetDiskFree(c, disk.free)
	})
}

// The apiserver reports the Kubernetes version in go.mod (what `kubectl
// version` shows), although go test sets no -ldflags.
func TestServerVersion(t *testing.T) {
	cptest.Need(t)
	want := controlplane.KubernetesModuleVersion()
	if want != controlplane.KubernetesGoMod {
		t.Fatalf("k8s.io/kubernetes version = %q, want %s", want, controlplane.KubernetesGoMod)
	}
	got, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if major, minor, _ := strings.Cut(strings.TrimPrefix(want, "v"), "."); got.GitVersion != want || got.Major != major || !strings.HasPrefix(minor, got.Minor+".") || got.GitCommit == controlplane.PlaceholderCommit {
		t.Fatalf("server version = %+v, want %s", got, want)
	}
}

func TestKubeconfigListsSystemNamespaces(t *testing.T) {
	cptest.Need(t)
	// Go through the written kubeconfig file, as a student's kubectl would.
	cfg, err := clientcmd.BuildConfigFromFlags("", env.CP.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := []string{"default", "kube-node-lease", "kube-public", "kube-system"}
	// The system namespaces are created by the apiserver's post-start hooks,
	// which may still be finishing right after /readyz.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have := map[string]bool{}
		for _, ns := range list.Items {
			have[ns.Name] = true
		}
		for _, n := range want {
			if !have[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("system namespaces %v not all present: %v", want, err)
	}
}

// The student's kubeconfig is kubeadm's kind of admin (a client
// certificate); the lab's own clients present a bearer token, which spares
// the apiserver a signature check per request. Both are system:masters.
func TestWhoIsWho(t *testing.T) {
	cptest.Need(t)
	student, err := clientcmd.BuildConfigFromFlags("", env.CP.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    *rest.Config
		user   string
		byCert bool
	}{
		{"student kubeconfig", student, "kubernetes-admin", true},
		{"lab components", env.CP.RestConfig(), "ccmlab-components", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(tc.cfg.CertData) > 0; got != tc.byCert {
				t.Errorf("client certificate present = %v, want %v", got, tc.byCert)
			}
			if got := tc.cfg.BearerToken != ""; got == tc.byCert {
				t.Errorf("bearer token present = %v, want %v", got, !tc.byCert)
			}
			client, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			review, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u := review.Status.UserInfo
			if u.Username != tc.user || !slices.Contains(u.Groups, "system:masters") {
				t.Errorf("authenticated as %q in %v, want %q in system:masters", u.Username, u.Groups, tc.user)
			}
		})
	}
}

// A Deployment without nodes must get a Pod that the real scheduler refuses:
// proof that the controller-manager (ReplicaSet) and the scheduler run.
func TestDeploymentPodPendingWithoutNodes(t *testing.T) {
	cptest.Need(t)
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: "nginx:1.29",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
	if _, err := env.Client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.AppsV1().Deployments("default").Delete(context.Background(), "web", metav1.DeleteOptions{})
	})

	var msg string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod := pods.Items[0]
		if pod.Status.Phase != corev1.PodPending {
			t.Fatalf("pod %s is %s, want Pending", pod.Name, pod.Status.Phase)
		}
		events, err := env.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pod.Name + ",reason=FailedScheduling",
		})
		if err != nil || len(events.Items) == 0 {
			return false, err
		}
		msg = events.Items[0].Message
		return true, nil
	})
	if err != nil {
		t.Fatalf("no FailedScheduling event: %v", err)
	}
	if !strings.Contains(msg, "no nodes available") {
		t.Fatalf("FailedScheduling says %q, want it to say no nodes are available", msg)
	}
}
