//go:build !unit

package flow_test

// These tests put the real pieces together against the real control plane:
// simulated kubelets, the embedded CCM (the real k8s.io/cloud-provider
// controllers), the data plane, and the Observer under test. They check that
// the steps come from what really happened, in order.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

// world is one lab without the HTTP side (app/apptest's plus the history of
// steps the Observer reported).
type world struct {
	cloud   *cloud.Cloud
	manager *controllers.Manager
	dp      *dataplane.Dataplane
	obs     *flow.Observer

	mu      sync.Mutex
	history map[string][]int // service or node key -> every step value seen, in order
}

func (w *world) record(c flow.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch d := c.Data.(type) {
	case flow.ServiceFlow:
		w.history[c.Key] = append(w.history[c.Key], d.Step)
	case flow.NodeFlow:
		w.history[c.Key] = append(w.history[c.Key], d.Step)
	}
}

func (w *world) steps(key string) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.history[key]...)
}

var shared *world

// theWorld starts the lab once for the package; tests use distinct names.
func theWorld(t *testing.T) *world {
	t.Helper()
	cptest.Need(t)
	if shared != nil {
		return shared
	}
	p, _ := profile.Get("aws")
	w := &world{history: map[string][]int{}}
	// The Service controller starts once the first nodes have joined: see
	// serviceControllerOffUnderRace.
	var first []string
	for _, name := range p.DefaultOn {
		if name != profile.Service {
			first = append(first, name)
		}
	}
	lab, err := apptest.Start(env, sim.Config{Profile: p, Nodes: 2, Controllers: first, OnChange: w.record})
	if err != nil {
		t.Fatal(err)
	}
	c := lab.Cloud
	w.cloud, w.manager, w.dp, w.obs = c, lab.Manager, lab.Dataplane, lab.Observer
	for _, inst := range c.Snapshot().Instances {
		waitFor(t, inst.PrivateDNSName+" initialized", func() bool {
			f, _ := w.obs.NodeFlow(inst.PrivateDNSName)
			return f.Step >= 5
		})
	}
	if err := w.manager.Enable(profile.Service); err != nil {
		t.Fatal(err)
	}
	shared = w
	return w
}

// serviceControllerOffUnderRace switches the Service controller off for the
// rest of a test that makes nodes join, when the test binary has -race.
// Why: a node that joins or is initialized while a Service syncs is a data
// race inside the upstream Service controller (k8s.io/cloud-provider
// v0.37.2; see skipInitialNodeAdds in controllers/units.go), which the race
// detector rightly reports; it is not this package's to fix. So the world's
// Service controller starts only after its first nodes are initialized (it
// then has no node work: its initial list's Adds are skipped), and the
// node-init test, which does not need it, runs without it under -race.
// Without -race that test runs with every controller on.
func serviceControllerOffUnderRace(t *testing.T, w *world) {
	if !raceEnabled {
		return
	}
	if err := w.manager.Disable(profile.Service); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.manager.Enable(profile.Service); err != nil {
			t.Error(err)
		}
	})
}

// waitFor is testutil.EventuallyTrue with the control plane's generous timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyTrue(t, 60*time.Second, what, cond)
}

func createApp(t *testing.T, name string) {
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
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = env.Client.AppsV1().Deployments("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func serviceFlow(w *world, key string) flow.ServiceFlow {
	f, _ := w.obs.ServiceFlow(key)
	return f
}

func assertMonotonic(t *testing.T, key string, seen []int) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("%s went backwards: %v", key, seen)
		}
	}
}

func TestServiceWalksOneToFiveThenTraffic(t *testing.T) {
	w := theWorld(t)
	createApp(t, "walk")
	key := "default/walk"
	waitFor(t, "step 5", func() bool { return serviceFlow(w, key).Step >= 5 })
	f := serviceFlow(w, key)
	for i, s := range f.Steps[:5] {
		if s.Status != flow.StepDone || s.Evidence == "" || s.At.IsZero() {
			t.Errorf("step %d = %+v, want done with evidence and a time", i+1, s)
		}
	}
	if f.Steps[1].Evidence != "event EnsuringLoadBalancer from service-controller" {
		t.Errorf("step 2 evidence %q, want the controller's own event", f.Steps[1].Evidence)
	}
	assertMonotonic(t, key, w.steps(key))

	// Step 6 needs a request; wait until the data plane has endpoints.
	waitFor(t, "a 200 through the load balancer", func() bool {
		tr, err := w.dp.Do(context.Background(), dataplane.Request{Kind: "loadbalancer", LB: f.LB})
		return err == nil && tr.Status == 200
	})
	waitFor(t, "step 6", func() bool { return serviceFlow(w, key).Step == 6 })
	if ev := serviceFlow(w, key).Steps[5].Evidence; ev == "" {
		t.Error("step 6 has no evidence")
	}
}

func TestServiceStuckWithoutServiceController(t *testing.T) {
	w := theWorld(t)
	if err := w.manager.Disable(profile.Service); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.manager.Enable(profile.Service) }()
	createApp(t, "nobody")
	key := "default/nobody"
	waitFor(t, "the stuck reason", func() bool {
		f := serviceFlow(w, key)
		return f.Stuck != nil && f.Stuck.Reason == flow.ReasonNoServiceController
	})
	if f := serviceFlow(w, key); f.Step != 1 || f.Steps[1].Status != flow.StepStuck {
		t.Fatalf("flow = step %d, step 2 %s; want step 1 with step 2 stuck", f.Step, f.Steps[1].Status)
	}
	// Turning it on lets the same Service go through.
	if err := w.manager.Enable(profile.Service); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "step 5 after enabling", func() bool { return serviceFlow(w, key).Step >= 5 })
}

func TestServiceShowsIAMError(t *testing.T) {
	w := theWorld(t)
	if err := w.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.cloud.SetFaults(cloud.Faults{}) }()
	createApp(t, "denied")
	key := "default/denied"
	waitFor(t, "the cloud error", func() bool {
		f := serviceFlow(w, key)
		return f.Stuck != nil && f.Stuck.Reason == flow.ReasonCloudError
	})
	f := serviceFlow(w, key)
	if f.Step != 2 {
		t.Errorf("step = %d, want 2 (noticed, not created)", f.Step)
	}
	want := "AccessDenied"
	if msg := f.Stuck.Message; !contains(msg, want) || !contains(msg, "CreateLoadBalancer") {
		t.Errorf("stuck message %q lacks %s and the action", msg, want)
	}
	if err := w.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healing after IAM is fixed", func() bool { return serviceFlow(w, key).Step >= 5 })
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestNewNodeWalksInitSteps(t *testing.T) {
	w := theWorld(t)
	serviceControllerOffUnderRace(t, w)
	t.Run("node controller off stops at registered", func(t *testing.T) {
		if err := w.manager.Disable(profile.Node); err != nil {
			t.Fatal(err)
		}
		inst, err := w.cloud.RunInstance(context.Background(), cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		name := inst.PrivateDNSName
		waitFor(t, "registered and stuck", func() bool {
			f, _ := w.obs.NodeFlow(name)
			return f.Step == 2 && f.Stuck != nil && f.Stuck.Reason == flow.ReasonNoNodeController
		})
		if err := w.manager.Enable(profile.Node); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "untainted after enabling", func() bool {
			f, _ := w.obs.NodeFlow(name)
			return f.Step >= 5
		})
		assertMonotonic(t, name, w.steps(name))
	})
	t.Run("node controller on walks to untainted", func(t *testing.T) {
		inst, err := w.cloud.RunInstance(context.Background(), cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		name := inst.PrivateDNSName
		waitFor(t, "untainted", func() bool {
			f, _ := w.obs.NodeFlow(name)
			return f.Step >= 5
		})
		f, _ := w.obs.NodeFlow(name)
		if f.Steps[2].Evidence == "" || f.Steps[3].Evidence == "" {
			t.Errorf("queried/written steps lack evidence: %+v", f.Steps)
		}
		assertMonotonic(t, name, w.steps(name))
	})
}
