//go:build !unit

package clustertest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

func must(t *testing.T, args ...string) string {
	t.Helper()
	return testutil.MustKubectl(t, env.CP.KubeconfigPath(), args...)
}

// eventually polls cond every 200 ms until it holds or timeout passes; the
// last error cond returned is the failure's reason.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, last)
	}
}

var served sync.Once

// serve builds the lab `ccmlab serve` builds, once for the package.
func serve(t *testing.T) {
	t.Helper()
	cptest.Need(t)
	var err error
	served.Do(func() { _, err = apptest.Serve(env, sim.DefaultLab()) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestWholeKubernetes: what a kubeadm cluster serves and runs by default
// is there, and its controllers act on a student's objects.
func TestWholeKubernetes(t *testing.T) {
	serve(t)
	c := env.Client
	ctx := context.Background()

	// The CronJob and the HPA act on their own clocks (the next minute,
	// the HPA's 15 s sync), so they are created first and checked last.
	cron := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute"},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever,
				Containers:    []v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"echo", "tick"}}},
			}}}},
		},
	}
	if _, err := c.BatchV1().CronJobs("default").Create(ctx, cron, metav1.CreateOptions{}); err != nil {
		t.Fatalf("CronJob refused: %v", err)
	}
	must(t, "create", "deployment", "scaled", "--image=nginx:1.29")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
			}}},
		},
	}
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("HPA refused: %v", err)
	}

	t.Run("api-versions", func(t *testing.T) {
		out := must(t, "api-versions")
		have := map[string]bool{}
		for _, l := range strings.Fields(out) {
			have[l] = true
		}
		for _, gv := range []string{"batch/v1", "autoscaling/v1", "autoscaling/v2", "certificates.k8s.io/v1", "node.k8s.io/v1", "policy/v1", "apps/v1"} {
			if !have[gv] {
				t.Errorf("kubectl api-versions has no %s:\n%s", gv, out)
			}
		}
	})
	t.Run("create job runs to Completed", func(t *testing.T) {
		must(t, "create", "job", "j", "--image=busybox:1.36", "--", "echo", "hi")
		must(t, "wait", "--for=condition=complete", "job/j", "--timeout=120s")
		out := must(t, "get", "pods", "-l", "job-name=j", "--no-headers")
		if !strings.Contains(out, "Completed") {
			t.Errorf("the Job's Pod is not Completed:\n%s", out)
		}
		if logs := must(t, "logs", "job/j"); strings.TrimSpace(logs) != "hi" {
			t.Errorf("kubectl logs job/j = %q, want hi", logs)
		}
	})
	t.Run("every new namespace gets kube-root-ca.crt", func(t *testing.T) {
		must(t, "create", "namespace", "fresh")
		eventually(t, time.Minute, "kube-root-ca.crt in fresh", func(ctx context.Context) error {
			cm, err := c.CoreV1().ConfigMaps("fresh").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !strings.Contains(cm.Data["ca.crt"], "BEGIN CERTIFICATE") {
				return errString("ca.crt holds no certificate")
			}
			return nil
		})
	})
	t.Run("ReplicationController makes Pods", func(t *testing.T) {
		rc := &v1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Name: "rc"},
			Spec: v1.ReplicationControllerSpec{
				Replicas: ptr.To[int32](2),
				Selector: map[string]string{"app": "rc"},
				Template: &v1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rc"}},
					Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}
		if _, err := c.CoreV1().ReplicationControllers("default").Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the RC's 2 Pods ready", func(ctx context.Context) error {
			got, err := c.CoreV1().ReplicationControllers("default").Get(ctx, "rc", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.ReadyReplicas != 2 {
				return errString("ready replicas " + itoa(got.Status.ReadyReplicas))
			}
			return nil
		})
	})
	t.Run("StatefulSet makes Pods", func(t *testing.T) {
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "sts"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](2),
				ServiceName: "sts",
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sts"}},
				Template: v1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sts"}},
					Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}
		if _, err := c.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// OrderedReady: sts-1 is made only once sts-0 is Ready.
		eventually(t, 2*time.Minute, "sts-0 and sts-1 ready", func(ctx context.Context) error {
			got, err := c.AppsV1().StatefulSets("default").Get(ctx, "sts", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.ReadyReplicas != 2 {
				return errString("ready replicas " + itoa(got.Status.ReadyReplicas))
			}
			return nil
		})
		if _, err := c.CoreV1().Pods("default").Get(ctx, "sts-1", metav1.GetOptions{}); err != nil {
			t.Errorf("no Pod sts-1: %v", err)
		}
	})
	t.Run("Pod Security enforces a namespace that opts in", func(t *testing.T) {
		must(t, "create", "namespace", "restricted")
		must(t, "label", "namespace", "restricted", "pod-security.kubernetes.io/enforce=restricted")
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "priv"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36",
				SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}},
		}
		_, err := c.CoreV1().Pods("restricted").Create(ctx, pod, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
			t.Errorf("a privileged Pod in a restricted namespace: got %v, want PodSecurity's refusal", err)
		}
		// The default level is privileged: the same Pod is taken elsewhere.
		pod.Spec.Containers[0].Command = []string{"sleep", "3600"}
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Errorf("a privileged Pod in default: %v", err)
		}
	})
	t.Run("HPA controller acts", func(t *testing.T) {
		// No metrics API in a lab (nor in a bare kubeadm cluster): the
		// controller says so in the HPA's conditions.
		eventually(t, time.Minute, "the HPA's ScalingActive condition", func(ctx context.Context) error {
			got, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "scaled", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == autoscalingv2.ScalingActive {
					return nil
				}
			}
			return errString("no ScalingActive condition yet")
		})
	})
	t.Run("CronJob controller makes a Job", func(t *testing.T) {
		eventually(t, 90*time.Second, "a Job of the CronJob", func(ctx context.Context) error {
			jobs, err := c.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, j := range jobs.Items {
				if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" && ref.Name == "every-minute" {
					return nil
				}
			}
			return errString("no Job owned by CronJob every-minute")
		})
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func itoa(i int32) string { return strconv.Itoa(int(i)) }
