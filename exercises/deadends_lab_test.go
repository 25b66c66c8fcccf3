//go:build !unit

package exercises

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Dead ends (issue 41 item 3): each test walks into a state no step of its
// exercise leads out of, sees the failing check name what happened and the
// way back, takes it, and sees the exercise reset cleanly or pass. They
// act through the API (client-go with kubectl's field managers, the
// cloud with the AWS CLI's caller), so they need no ccmlab binary.

// deadEnd waits until the step's check of kind says every part of want
// (English), and checks the Japanese verdict says the way out (wantJA)
// too.
func (w *world) deadEnd(t *testing.T, id, step, kind string, timeout time.Duration, wantJA string, want ...string) {
	t.Helper()
	var got string
	testutil.Eventually(t, timeout, id+"/"+step+": "+kind+" names the dead end", func() (bool, string) {
		r := stepOf(w.check(t, id), step)
		if r.Status == StepPassed {
			t.Fatalf("%s/%s passed in a dead end: %s", id, step, describe(r))
		}
		for _, c := range r.Checks {
			if c.Kind == kind && !c.Pass {
				got = c.Detail
				if !slices.ContainsFunc(want, func(s string) bool { return !strings.Contains(c.Detail, s) }) {
					return true, ""
				}
			}
		}
		var all []string
		for _, c := range r.Checks {
			all = append(all, fmt.Sprintf("%s pass=%v: %s", c.Kind, c.Pass, c.Detail))
		}
		return false, describe(r) + "\n" + strings.Join(all, "\n")
	})
	ja := w.detailJA(t, id, step, kind)
	if !strings.Contains(ja, wantJA) {
		t.Errorf("%s/%s: %s in Japanese says no way out: %s (en: %s)", id, step, kind, ja, got)
	}
	t.Logf("%s/%s %s: %s", id, step, kind, got)
}

// detailJA evaluates the step's first check of kind in Japanese.
func (w *world) detailJA(t *testing.T, id, step, kind string) string {
	t.Helper()
	ctx := context.Background()
	start, err := w.svc.startOf(ctx, id)
	must(t, err)
	w.svc.mu.Lock()
	r := *w.svc.runOf(id)
	w.svc.mu.Unlock()
	since := r.startSeq
	// The evidence counts from the previous step's pass, as the service
	// evaluates it; the whole exercise's history is a superset that
	// shows the same dead end.
	for _, st := range w.svc.byID[id].Steps {
		if st.ID != step {
			continue
		}
		for _, c := range st.Checks {
			if c.Kind == kind {
				return check.EvaluateStep(ctx, w.svc.cfg.Env, check.Input{Start: start, StartSeq: r.startSeq, Since: since, Exercise: id, Step: step}, c).Detail.JA
			}
		}
	}
	t.Fatalf("%s/%s has no %s check", id, step, kind)
	return ""
}

func (w *world) deployment(t *testing.T, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := env.Client.AppsV1().Deployments(format.Namespace).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.29",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}, metav1.CreateOptions{FieldManager: "kubectl-create"})
	must(t, err)
}

func (w *world) lbService(t *testing.T, name, app string) {
	t.Helper()
	_, err := env.Client.CoreV1().Services(format.Namespace).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": app},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{FieldManager: "kubectl-expose"})
	must(t, err)
}

// lbsOf lists the load balancers tagged for default/name.
func (w *world) lbsOf(name string) []string {
	var out []string
	for _, lb := range w.cloud.LoadBalancerViews() {
		if cloud.TaggedService(lb.Tags) == format.Namespace+"/"+name {
			out = append(out, lb.Name)
		}
	}
	return out
}

// 02: the taint removed with kubectl taint. The Node controller then
// leaves the Nodes uninitialized; the reset replaces the worker VMs and
// the exercise passes the right way.
func TestDeadEndUntaintByHand(t *testing.T) {
	w := theWorld(t)
	const id = "no-ccm"
	ctx := context.Background()
	w.reset(t, id)
	w.deployment(t, "waiting")
	w.waitStep(t, id, "stuck", 30*time.Second)

	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, n := range nodes.Items {
		if !kube.HasUninitializedTaint(&n) {
			continue
		}
		updateNode(t, n.Name, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == kube.UninitializedTaint().Key })
		})
	}
	must(t, w.manager.Enable(profile.Node))
	w.deadEnd(t, id, "node-controller-on", "objectChange", 60*time.Second, "リセット", "removed by hand", "Reset the exercise")
	w.deadEnd(t, id, "node-controller-on", "nodesInitialized", 30*time.Second, "リセット", "providerID is empty", "already gone", "Reset the exercise")

	// The way out: the reset, then the exercise the right way.
	w.reset(t, id)
	w.expectNothingPasses(t, id)
	w.deployment(t, "waiting")
	w.waitStep(t, id, "stuck", 30*time.Second)
	must(t, w.manager.Enable(profile.Node))
	w.waitStep(t, id, "node-controller-on", 60*time.Second)
	w.expectDone(t, id)
}

// 04: a Service the Service controller had seen (it carries the
// load-balancer-cleanup finalizer), deleted while the controller is off,
// hangs in Terminating and blocks a new Service of its name. The reset
// finishes the deletion; then the exercise passes.
func TestDeadEndDeleteWhileServiceOff(t *testing.T) {
	w := theWorld(t)
	const id = "pending-on-purpose"
	ctx := context.Background()
	services := env.Client.CoreV1().Services(format.Namespace)
	w.reset(t, id)
	w.deployment(t, "web")
	w.lbService(t, "web", "web")
	testutil.Eventually(t, 60*time.Second, "web's finalizer", func() (bool, string) {
		svc, err := services.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer), "none yet"
	})
	must(t, w.manager.Disable(profile.Service))
	w.waitStep(t, id, "service-off", 10*time.Second)
	must(t, services.Delete(ctx, "web", metav1.DeleteOptions{}))
	w.deadEnd(t, id, "expose", "unwatched", 30*time.Second, "リセット", "Terminating", servicehelper.LoadBalancerCleanupFinalizer, "Reset the exercise")
	if svc, err := services.Get(ctx, "web", metav1.GetOptions{}); err != nil || svc.DeletionTimestamp == nil {
		t.Fatalf("web is not stuck in Terminating: %v", err)
	}

	w.reset(t, id)
	if _, err := services.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("web after the reset: %v", err)
	}
	if lbs := w.lbsOf("web"); len(lbs) != 0 {
		t.Fatalf("web's load balancer after the reset: %v", lbs)
	}
	w.expectFailFirst(t, id)
	must(t, w.manager.Disable(profile.Service))
	w.waitStep(t, id, "service-off", 10*time.Second)
	w.deployment(t, "web")
	w.lbService(t, "web", "web")
	w.waitStep(t, id, "expose", 30*time.Second)
}

// 10: the finalizer removed by hand while the Service controller is off.
// The Service goes, its load balancer stays with nobody to delete it; the
// reset deletes it.
func TestDeadEndFinalizerByHand(t *testing.T) {
	w := theWorld(t)
	const id = "delete-finalizer"
	ctx := context.Background()
	services := env.Client.CoreV1().Services(format.Namespace)
	w.reset(t, id)
	w.deployment(t, "fin")
	w.lbService(t, "fin", "fin")
	w.waitStep(t, id, "finalizer", 60*time.Second)

	must(t, w.manager.Disable(profile.Service))
	must(t, services.Delete(ctx, "fin", metav1.DeleteOptions{}))
	_, err := services.Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	must(t, err)
	w.deadEnd(t, id, "terminating", "serviceTerminating", 30*time.Second, "リセット", "while the Service controller was off", "is still in the cloud", "Reset the exercise")
	// Back on, the controller does not delete it either.
	must(t, w.manager.Enable(profile.Service))
	w.deadEnd(t, id, "terminating", "serviceTerminating", 10*time.Second, "リセット", "is still in the cloud")
	if lbs := w.lbsOf("fin"); len(lbs) != 1 {
		t.Fatalf("fin's load balancers with the controller back: %v", lbs)
	}

	w.reset(t, id)
	if lbs := w.lbsOf("fin"); len(lbs) != 0 {
		t.Fatalf("the orphaned load balancer after the reset: %v", lbs)
	}
	w.expectFailFirst(t, id)
}

// 12: the Node of a terminated VM deleted with kubectl delete node. The
// reset brings the lab back to three running, Ready workers.
func TestDeadEndNodeDeletedByHand(t *testing.T) {
	w := theWorld(t)
	const id = "terminated-vm"
	ctx := context.Background()
	w.reset(t, id)
	must(t, w.manager.Disable(profile.NodeLifecycle))
	victim := runningInstances(w.cloud)[0]
	w.terminate(t, victim.ID)
	must(t, env.Client.CoreV1().Nodes().Delete(ctx, victim.PrivateDNSName, metav1.DeleteOptions{}))
	w.deadEnd(t, id, "not-ready", "nodeNotReady", 30*time.Second, "リセット", victim.PrivateDNSName, "kubectl delete node", "Reset the exercise")

	w.reset(t, id)
	running := runningInstances(w.cloud)
	if len(running) < worldNodes {
		t.Fatalf("after the reset %d VMs run, want at least %d", len(running), worldNodes)
	}
	testutil.Eventually(t, 60*time.Second, "every running VM's Node Ready", func() (bool, string) {
		for _, inst := range runningInstances(w.cloud) {
			n, err := env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
			if err != nil || !kube.NodeReady(n) {
				return false, inst.PrivateDNSName + " not Ready"
			}
		}
		return true, ""
	})
	w.expectFailFirst(t, id)
}

// 16: the ELB put back in every zone with the AWS CLI instead of through
// the Service: service-controller has nothing left to attach. The reset
// puts tags, Service and ELB back as they were.
func TestDeadEndSubnetsByCLI(t *testing.T) {
	w := theWorld(t)
	const id = "subnet-tags"
	ctx := context.Background()
	cli := cloud.WithCaller(ctx, "aws-cli")
	w.reset(t, id)
	net := w.cloud.AWSNetworkInfo()
	var ids []string
	for _, s := range net.Subnets {
		ids = append(ids, s.ID)
	}
	own := w.cloud.ClusterTagKey()
	other := "kubernetes.io/cluster/other"
	must(t, w.cloud.CreateTags(cli, ids, map[string]string{other: "owned"}))
	must(t, w.cloud.DeleteTags(cli, ids, []string{own}))
	w.waitStep(t, id, "tag-other", 10*time.Second)
	w.deployment(t, "subnet-web")
	w.lbService(t, "subnet-web", "subnet-web")
	w.waitStep(t, id, "expose", 90*time.Second)
	lbName := cloudprovider.DefaultLoadBalancerName(w.service(t, "subnet-web"))
	lb, _ := w.cloud.LookupLoadBalancer(lbName)
	if res := w.answer(t, id, "which-subnet", lb.Subnets[0]); !res.Correct {
		t.Fatalf("the ELB's subnet %s: %+v", lb.Subnets[0], res)
	}
	w.waitStep(t, id, "which-subnet", 5*time.Second)

	// The dead end: aws elb attach-load-balancer-to-subnets, then the
	// tags back and the Service touched.
	_, err := w.cloud.ELBAttachSubnets(cli, lbName, ids)
	must(t, err)
	must(t, w.cloud.CreateTags(cli, ids, map[string]string{own: "owned"}))
	must(t, w.cloud.DeleteTags(cli, ids, []string{other}))
	_, err = env.Client.CoreV1().Services(format.Namespace).Patch(ctx, "subnet-web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"})
	must(t, err)
	w.deadEnd(t, id, "restore", "cloudCall", 30*time.Second, "リセット", "called by aws-cli", "Reset the exercise")

	w.reset(t, id)
	for _, s := range w.cloud.AWSNetworkInfo().Subnets {
		if s.Tags[own] != "owned" || s.Tags[other] != "" {
			t.Errorf("subnet %s after the reset: %v", s.ID, s.Tags)
		}
	}
	if lbs := w.lbsOf("subnet-web"); len(lbs) != 0 {
		t.Errorf("subnet-web's ELB after the reset: %v", lbs)
	}
	w.expectFailFirst(t, id)
}

// 19: the Node controller switched on while the CCM DaemonSet places no
// Pod: the switch waits for a CCM that cannot run. The reset puts the
// toleration back, a CCM leads and the control plane is initialized.
func TestDeadEndSwitchWhileStranded(t *testing.T) {
	w := theWorld(t)
	const id = "ccm-toleration"
	ctx := context.Background()
	w.reset(t, id)
	must(t, w.manager.Disable(profile.Node))
	cps, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: check.LabelControlPlane})
	must(t, err)
	updateNode(t, cps.Items[0].Name, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, kube.UninitializedTaint())
	})
	ds, err := check.CCMDaemonSet(ctx, env.Client)
	must(t, err)
	_, err = env.Client.AppsV1().DaemonSets("kube-system").Patch(ctx, ds.Name, types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"tolerations":[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}]}}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"})
	must(t, err)
	w.waitStep(t, id, "deadlock", 90*time.Second)

	// The switch, as the page's panel would send it: it waits.
	switched := make(chan error, 1)
	go func() { switched <- w.manager.Enable(profile.Node) }()
	w.deadEnd(t, id, "way-out", "ccmDaemonSet", 30*time.Second, "リセット", "No CCM Pod runs", "2 minutes", "Reset the exercise")
	select {
	case err := <-switched:
		t.Fatalf("the switch returned with no CCM Pod: %v", err)
	default:
	}

	w.reset(t, id)
	testutil.Eventually(t, 150*time.Second, "a CCM leads and the control plane is initialized", func() (bool, string) {
		l, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: check.LabelControlPlane})
		return err == nil && w.manager.Identity() != "" && !kube.HasUninitializedTaint(&l.Items[0]), "not yet"
	})
	select {
	case err := <-switched:
		t.Logf("the waiting switch returned: %v", err)
	case <-time.After(150 * time.Second):
		t.Error("the waiting switch never returned")
	}
	for name, on := range w.manager.Status() {
		if !on {
			t.Errorf("after the reset controller %s is off", name)
		}
	}
	w.expectFailFirst(t, id)
}

// 20: the limit lifted, Services wait for their next retry. The check
// says they will come by themselves and how to retry at once; switching
// the Service controller off and on, the exercise passes.
func TestDeadEndRetryWait(t *testing.T) {
	w := theWorld(t)
	const id = "rate-limits"
	w.reset(t, id)
	must(t, w.cloud.SetFaults(cloud.Faults{QPS: 0.2, Burst: 1}))
	w.waitStep(t, id, "throttle", 10*time.Second)
	w.deployment(t, "burst")
	for _, n := range []string{"burst-1", "burst-2", "burst-3", "burst-4"} {
		w.lbService(t, n, "burst")
	}
	w.waitStep(t, id, "many-services", 60*time.Second)
	// Wait for a failed sync's event, then lift the limit.
	testutil.Eventually(t, 60*time.Second, "a SyncLoadBalancerFailed event", func() (bool, string) {
		l, err := env.Client.CoreV1().Events(format.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=SyncLoadBalancerFailed"})
		return err == nil && len(l.Items) > 0, "none"
	})
	must(t, w.cloud.SetFaults(cloud.Faults{}))
	w.deadEnd(t, id, "lift", "servicesExternalIP", 10*time.Second, "オフにしてオンに戻します", "SyncLoadBalancerFailed", "retries a failed Service by itself", "5 s", "300 s")

	must(t, w.manager.Disable(profile.Service))
	must(t, w.manager.Enable(profile.Service))
	w.waitStep(t, id, "lift", 60*time.Second)
	w.expectDone(t, id)
}

// updateNode changes a Node as kubectl taint does, again on a conflict:
// the kubelet and the controllers write the same object.
func updateNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: "kubectl-taint"})
		return err
	}))
}
