//go:build !unit

package exercises

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The exercises are tested on the lab `ccmlab serve --addons lbc` builds:
// the same defaults, a control-plane node with the control plane's mirror
// Pods and the CCM's Pod.
func TestWorldIsTheServedLab(t *testing.T) {
	w := theWorld(t)
	want := sim.Served(servedLab(), sim.Embedded{StaticPods: env.CP.StaticPods()})
	got := w.lab.Config
	def := sim.DefaultLab()
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"profile", got.Profile.Name, want.Profile.Name},
		{"default profile", want.Profile.Name, def.Profile.Name},
		{"controllers", got.Controllers, want.Controllers},
		{"default controllers", want.Controllers, def.Profile.DefaultOn},
		{"addons", got.Addons, want.Addons},
		{"nodes", got.Nodes, want.Nodes},
		{"default nodes", want.Nodes, sim.DefaultNodes},
		{"cloud latency", got.CloudLatency, want.CloudLatency},
		{"tuning", got.Tuning, want.Tuning},
		{"control-plane node", got.ControlPlaneNode, true},
		{"static Pods", len(got.StaticPods), len(want.StaticPods)},
		{"cluster CIDR", got.ClusterCIDR, env.CP.ClusterCIDR()},
	} {
		if !equalJSON(c.got, c.want) {
			t.Errorf("%s: the test world has %v, ccmlab serve builds %v", c.what, c.got, c.want)
		}
	}
	if len(got.CACertPEM) == 0 {
		t.Error("the test world's kubelets serve no API (no CA), unlike the served lab's")
	}

	// And the world runs what serve runs: the workers and the control-plane
	// node, its mirror Pods and the CCM's Pod.
	ctx := context.Background()
	testutil.Eventually(t, 90*time.Second, "the served lab's nodes and kube-system Pods", func() (bool, string) {
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		cp := 0
		for _, n := range nodes.Items {
			if isControlPlaneNode(&n) {
				cp++
			}
		}
		if cp != 1 || len(nodes.Items) < sim.DefaultNodes+1 {
			return false, "nodes: " + strconv.Itoa(len(nodes.Items)) + ", control-plane: " + strconv.Itoa(cp)
		}
		pods, err := env.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var components []string
		for _, p := range pods.Items {
			// The control plane's mirror Pods carry kubeadm's component
			// label; the CCM's DaemonSet Pod upstream's k8s-app label.
			components = append(components, p.Labels["component"]+p.Labels["k8s-app"])
		}
		// kube-system's add-ons (app/sim/kubesystem.go): CoreDNS's Pods
		// carry kube-dns's label, kube-proxy's its own.
		for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", sim.CCMDaemonSetName(def.Profile), "kube-dns", sim.KubeProxyDaemonSet} {
			if !slices.Contains(components, c) {
				return false, "kube-system has no " + c + " Pod: " + strings.Join(components, ",")
			}
		}
		return true, ""
	})
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// A reset that fails leaves the exercise at its start (no progress, no
// named or hidden cause) with a note that says why, and the exercise
// cannot be checked until a reset went through.
func TestResetFailureGoesBackToStart(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	t.Cleanup(func() { w.restore(t, MysteryID) })
	must(t, w.svc.ResetWith(ctx, MysteryID, ResetOptions{Cause: CauseNoServiceController}))
	if _, err := w.svc.NameCause(ctx, MysteryID, CauseNoServiceController, "en"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.svc.Get(ctx, MysteryID, "en"); err != nil || !d.Named || d.Reset != nil {
		t.Fatalf("before the failed reset: named %v, reset note %+v, err %v", d.MysteryView != nil && d.Named, d.Reset, err)
	}

	// The same lab and store, with no time to settle: the reset fails.
	hasty, err := New(Config{Env: w.svc.cfg.Env, Store: w.store, Nodes: worldNodes, SettleTimeout: time.Nanosecond})
	must(t, err)
	err = hasty.ResetWith(ctx, MysteryID, ResetOptions{Cause: CauseIAMDeny})
	if err == nil {
		t.Fatal("a reset with no time to settle went through")
	}
	for _, s := range []*Service{hasty, w.svc} {
		d, err := s.Get(ctx, MysteryID, "en")
		must(t, err)
		if d.Reset == nil || d.Reset.State != progress.ResetFailed || d.Reset.Note == "" {
			t.Errorf("after the failed reset the note is %+v", d.Reset)
		}
		if d.Named || d.Correct != nil || d.Cause != "" || d.StepsPassed != 0 || d.QuestionsCorrect != 0 {
			t.Errorf("after the failed reset the exercise kept the previous round: named %v correct %v cause %q steps %d", d.Named, d.Correct, d.Cause, d.StepsPassed)
		}
	}
	if _, err := w.svc.NameCause(ctx, MysteryID, CauseIAMDeny, "en"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("naming a cause after the failed reset: %v, want ErrUnavailable", err)
	}
	if _, err := w.svc.Check(ctx, MysteryID, "en"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("checking after the failed reset: %v, want ErrUnavailable", err)
	}

	// A reset that goes through clears the note.
	must(t, w.svc.ResetWith(ctx, MysteryID, ResetOptions{Cause: CauseNoServiceController}))
	d, err := w.svc.Get(ctx, MysteryID, "en")
	must(t, err)
	if d.Reset != nil || d.Named {
		t.Errorf("after a good reset: note %+v, named %v", d.Reset, d.Named)
	}
}

// A reset the lab stopped in the middle of (its "running" record is in the
// store, the mystery's Service already deleted) is finished at the next
// start, as it was asked, and the exercise says so.
func TestResetInterruptedIsFinishedAtStart(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	t.Cleanup(func() { w.restore(t, MysteryID) })
	must(t, w.svc.ResetWith(ctx, MysteryID, ResetOptions{Cause: CauseNoServiceController}))

	// What a kill -9 in the middle leaves: the record, and shop deleted.
	must(t, w.store.BeginReset(ctx, MysteryID, progressKeys(MysteryID), `{"cause":"iam-deny"}`, time.Now()))
	must(t, w.svc.deleteObjects(ctx, w.svc.byID[MysteryID].Setup.Delete))

	// The next start: a new Service over the same store and lab.
	next, err := New(Config{Env: w.svc.cfg.Env, Store: w.store, Nodes: worldNodes, SettleTimeout: 90 * time.Second})
	must(t, err)
	if d, err := next.Get(ctx, MysteryID, "en"); err != nil || d.Reset == nil || d.Reset.State != progress.ResetRunning {
		t.Fatalf("before the start the note is %+v (err %v), want running", d.Reset, err)
	}
	must(t, next.FinishInterrupted(ctx))
	svc, err := env.Client.CoreV1().Services(format.Namespace).Get(ctx, MysteryService, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the finished reset left no Service %s: %v", MysteryService, err)
	}
	if ok, why, err := next.mysterySymptom(ctx, CauseIAMDeny); err != nil || !ok {
		t.Errorf("the finished reset did not plant iam-deny on %s: %s %v", svc.Name, why, err)
	}
	d, err := next.Get(ctx, MysteryID, "en")
	must(t, err)
	if d.Reset == nil || d.Reset.State != progress.ResetResumed || !strings.Contains(d.Reset.Note, "started again") {
		t.Errorf("after the start the note is %+v, want resumed", d.Reset)
	}
	// The ja API says it in Japanese.
	ja, err := next.Get(ctx, MysteryID, "ja")
	must(t, err)
	if ja.Reset == nil || i18n.NotJapanese(ja.Reset.Note) == "no Japanese in it" || i18n.EnglishSentence(ja.Reset.Note) != "" {
		t.Errorf("after the start the Japanese note is %+v", ja.Reset)
	}
	if v, err := next.NameCause(ctx, MysteryID, CauseIAMDeny, "en"); err != nil || v.Correct == nil || !*v.Correct {
		t.Errorf("the finished reset hid another cause than it was asked: %+v %v", v, err)
	}
	// Nothing is left running: a second start finishes nothing.
	running, err := w.store.ResetsRunning(ctx)
	must(t, err)
	if len(running) != 0 {
		t.Errorf("still running after the start: %v", running)
	}
}

// Reset deletes the load balancer a Service left behind when its finalizer
// was removed by hand, and the Events of the exercise's objects.
func TestResetDeletesOrphanedLoadBalancersAndEvents(t *testing.T) {
	w := theWorld(t)
	const id = "delete-finalizer"
	ctx := context.Background()
	w.reset(t, id)
	services := env.Client.CoreV1().Services(format.Namespace)
	_, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fin"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "fin"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	must(t, err)
	tagged := func() []string {
		var out []string
		for _, lb := range w.cloud.LoadBalancerViews() {
			if cloud.TaggedService(lb.Tags) == format.Namespace+"/fin" {
				out = append(out, lb.Name)
			}
		}
		return out
	}
	finEvents := func() []string {
		l, err := env.Client.CoreV1().Events(format.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=fin"})
		must(t, err)
		var out []string
		for _, e := range l.Items {
			out = append(out, e.Reason)
		}
		return out
	}
	testutil.Eventually(t, 60*time.Second, "fin's load balancer and its events", func() (bool, string) {
		return len(tagged()) == 1 && slices.Contains(finEvents(), "EnsuredLoadBalancer"), strings.Join(finEvents(), ",")
	})

	// The finalizer removed by hand while the Service controller is off:
	// the Service goes, its load balancer stays, owned by nobody.
	must(t, w.manager.Disable(profile.Service))
	must(t, services.Delete(ctx, "fin", metav1.DeleteOptions{}))
	_, err = services.Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	must(t, err)
	testutil.Eventually(t, 30*time.Second, "fin gone", func() (bool, string) {
		_, err := services.Get(ctx, "fin", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	must(t, w.manager.Enable(profile.Service))
	if len(tagged()) != 1 {
		t.Fatalf("no orphaned load balancer to test with: %v", tagged())
	}

	orphan := tagged()[0]
	w.reset(t, id)
	if lbs := tagged(); len(lbs) != 0 {
		t.Errorf("the orphaned load balancer survived the reset: %v", lbs)
	}
	// cloud-provider-aws made a security group for its Classic ELB: the
	// reset deletes it too, as the provider would have.
	for _, g := range w.cloud.SecurityGroupViews() {
		if g.Name == cloud.ELBSecurityGroupPrefix+orphan {
			t.Errorf("the orphaned load balancer's security group %s survived the reset", g.ID)
		}
	}
	if evs := finEvents(); len(evs) != 0 {
		t.Errorf("the previous round's events of fin survived the reset: %v", evs)
	}
	if calls := w.cloud.Calls(0); !slices.ContainsFunc(calls, func(c cloud.Call) bool {
		return c.Action == cloud.ActionDeleteLoadBalancer && c.Caller == ResetCaller
	}) {
		t.Error("the call log has no DeleteLoadBalancer by the reset")
	}
}

// A reset takes back the VMs launched during the exercise, with their
// Nodes, and leaves the lab with its own nodes: the next exercise starts
// from the lab's start.
func TestResetTerminatesVMsLaunchedDuringTheExercise(t *testing.T) {
	w := theWorld(t)
	const id = "routes"
	ctx := context.Background()
	w.reset(t, id)
	inst := w.launch(t)
	nodes := env.Client.CoreV1().Nodes()
	testutil.Eventually(t, 60*time.Second, "the launched VM's Node", func() (bool, string) {
		_, err := nodes.Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		return err == nil, "no Node " + inst.PrivateDNSName
	})

	w.reset(t, id)
	if now, ok := w.cloud.LookupInstance(inst.ID); !ok || now.State != cloud.InstanceTerminated {
		t.Errorf("the VM launched during the exercise survived its reset: %+v", now)
	}
	if _, err := nodes.Get(ctx, inst.PrivateDNSName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node of the VM launched during the exercise survived its reset: %v", err)
	}
	running := runningInstances(w.cloud)
	if len(running) < worldNodes {
		t.Errorf("after the reset %d workers run, want at least %d", len(running), worldNodes)
	}
	for _, r := range running {
		if r.LaunchedBy == cloud.CallerUser {
			t.Errorf("a student's VM %s runs after the reset", r.ID)
		}
	}
	if !slices.ContainsFunc(w.cloud.Calls(0), func(c cloud.Call) bool {
		return c.Action == cloud.ActionTerminateInstances && c.Caller == ResetCaller && slices.Contains(c.Resources, inst.ID)
	}) {
		t.Errorf("the call log has no TerminateInstances of %s by the reset", inst.ID)
	}
}

// terminated-vm's last step needs the node-lifecycle controller to have
// deleted the Node: deleting it with kubectl does not pass.
func TestTerminatedVMKubectlDeleteDoesNotPass(t *testing.T) {
	w := theWorld(t)
	const id = "terminated-vm"
	w.reset(t, id)
	must(t, w.manager.Disable(profile.NodeLifecycle))
	victim := runningInstances(w.cloud)[0]
	w.terminate(t, victim.ID)
	w.waitStep(t, id, "not-ready", 60*time.Second)
	w.failsNow(t, id, "deleted")

	w.kubectl(t, "kubectl delete node "+victim.PrivateDNSName)
	must(t, w.manager.Enable(profile.NodeLifecycle))
	// Barrier: the switch and the deletion are both seen; with them the
	// step must still fail, for want of the controller's DeletingNode.
	var r StepResult
	testutil.Eventually(t, 60*time.Second, "the switch and the deletion seen", func() (bool, string) {
		r = stepOf(w.check(t, id), "deleted")
		switched, deleted := false, false
		for _, c := range r.Checks {
			switched = switched || c.Kind == "switched" && c.Pass
			deleted = deleted || c.Kind == "objectChange" && c.Pass
		}
		return switched && deleted, describe(r)
	})
	if r.Status != StepFailed {
		t.Fatalf("deleting the Node with kubectl passed: %s", describe(r))
	}
	for _, c := range r.Checks {
		if c.Kind == "nodeDeleted" && (c.Pass || !strings.Contains(c.Detail, "DeletingNode")) {
			t.Errorf("nodeDeleted after kubectl delete node: pass %v, %s", c.Pass, c.Detail)
		}
	}
}
