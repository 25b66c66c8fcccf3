//go:build !unit

package upstreamflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
)

var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyTrue(t, 3*time.Minute, what, cond)
}

func createApp(t *testing.T, name string, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.29", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	if _, err := env.Client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamSixSteps runs a plain and an nlb-annotated LoadBalancer
// Service through k8s.io/cloud-provider-aws on the lab `ccmlab serve`
// builds, and sees the six steps done with steps 3 and 4 naming the calls
// the provider really made: a Classic ELB's, an NLB's.
func TestUpstreamSixSteps(t *testing.T) {
	cptest.Need(t)
	lab, up, err := apptest.ServeUpstream(env, sim.DefaultLab())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want3       string
		want4       string // the end of step 4's evidence
	}{
		{"plain", nil, "call elb CreateLoadBalancer by service-controller",
			"(elb RegisterInstancesWithLoadBalancer + ConfigureHealthCheck)"},
		{"nlb", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}, "call elbv2 CreateLoadBalancer by service-controller",
			"(elbv2 CreateTargetGroup + RegisterTargets + CreateListener)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createApp(t, "up-"+tc.name, tc.annotations)
			key := "default/up-" + tc.name
			flowOf := func() flow.ServiceFlow { f, _ := lab.Observer.ServiceFlow(key); return f }
			waitFor(t, key+" at step 5", func() bool { return flowOf().Step >= 5 })
			f := flowOf()
			for _, s := range f.Steps[:5] {
				if s.Status != flow.StepDone || s.Evidence == "" || s.At.IsZero() {
					t.Errorf("step %d = %+v, want done with evidence and a time", s.N, s)
				}
			}
			if got := f.Steps[2].Evidence; got != tc.want3 {
				t.Errorf("step 3 evidence %q, want %q", got, tc.want3)
			}
			if got := f.Steps[3].Evidence; !strings.HasSuffix(got, tc.want4) {
				t.Errorf("step 4 evidence %q, want it to end %q", got, tc.want4)
			}
			// The provider's calls carry the interface method they served
			// (its decorator tells the AWS API), as the lab's own do.
			var created bool
			for _, c := range lab.Cloud.Calls(0) {
				if c.Action == "CreateLoadBalancer" && c.Caller == "service-controller" && c.Method == "LoadBalancer.EnsureLoadBalancer" {
					created = true
				}
			}
			if !created {
				t.Errorf("no CreateLoadBalancer in the call log attributed to LoadBalancer.EnsureLoadBalancer")
			}
			lb, ok := lab.Cloud.LookupLoadBalancer(f.LB)
			if !ok || len(lb.Targets) == 0 {
				t.Fatalf("the cloud has no load balancer %q with targets: %+v", f.LB, lb)
			}

			// Step 6 needs a request through the load balancer, which the
			// data plane must serve.
			waitFor(t, "a 200 through the load balancer", func() bool {
				tr, err := lab.Dataplane.Do(context.Background(), dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: f.LB})
				return err == nil && tr.Status == 200
			})
			waitFor(t, "step 6", func() bool { return flowOf().Step == 6 })
		})
	}
	if hits := up.Tripwire.Hits(); len(hits) > 0 {
		t.Fatalf("requests reached the tripwire (they would have gone to AWS): %v", hits)
	}
}
