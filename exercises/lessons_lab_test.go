//go:build !unit

package exercises

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// expectFailFirst: straight after the reset no step passes, and each
// step's checks, evaluated on their own with the evidence counted from the
// reset (ignoring the step order), do not all hold; a step that asks for
// an answer cannot pass before one is typed.
func (w *world) expectFailFirst(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	ex := w.svc.byID[id]
	start, err := w.svc.startOf(ctx, id)
	must(t, err)
	w.svc.mu.Lock()
	r := *w.svc.runOf(id)
	w.svc.mu.Unlock()
	for _, st := range ex.Steps {
		if st.Answer != nil {
			continue
		}
		in := check.Input{Start: start, StartSeq: r.startSeq, Since: r.startSeq, Exercise: id, Step: st.ID}
		failed := false
		for _, c := range st.Checks {
			if !check.EvaluateStep(ctx, w.svc.cfg.Env, in, c).Pass {
				failed = true
			}
		}
		if !failed {
			t.Errorf("%s/%s: every check passes without the student doing anything", id, st.ID)
		}
	}
	rep := w.check(t, id)
	for i, s := range rep.Steps {
		want := StepLocked
		if i == 0 {
			want = StepFailed
		}
		if s.Status != want {
			t.Errorf("%s/%s after a reset: %s, want %s", id, s.ID, describe(s), want)
		}
	}
	if rep.Done {
		t.Errorf("%s is done without doing anything", id)
	}
}

// The lessons added for the rest of the chapter, played the way their
// solutions say, against the real lab: nothing passes right after the
// reset, each step passes once its action is done.

func TestExerciseDeleteFinalizer(t *testing.T) {
	w := theWorld(t)
	const id = "delete-finalizer"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.run(t, id, "finalizer", "create deployment")
	w.run(t, id, "finalizer", "expose deployment")
	w.waitStep(t, id, "finalizer", 30*time.Second)

	// The wrong order: deleting while the controller runs would clean up
	// at once; here the controller is off first, so the Service waits.
	must(t, w.manager.Disable(profile.Service))
	w.run(t, id, "terminating", "delete svc")
	w.waitStep(t, id, "terminating", 30*time.Second)
	svc, err := env.Client.CoreV1().Services("default").Get(context.Background(), "fin", metav1.GetOptions{})
	must(t, err)
	if svc.DeletionTimestamp == nil || !slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		t.Fatalf("service fin: deletionTimestamp %v finalizers %v", svc.DeletionTimestamp, svc.Finalizers)
	}
	if r := stepOf(w.check(t, id), "cleanup"); r.Status == StepPassed {
		t.Fatalf("cleanup passed while the Service controller is off: %s", describe(r))
	}

	must(t, w.manager.Enable(profile.Service))
	w.waitStep(t, id, "cleanup", 30*time.Second)
	w.expectDone(t, id)
}

func TestExerciseShutdownTaint(t *testing.T) {
	w := theWorld(t)
	const id = "shutdown-taint"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	inst := runningInstances(w.cloud)[0]
	user := cloud.WithCaller(context.Background(), "user")
	t.Cleanup(func() {
		if cur, ok := w.cloud.LookupInstance(inst.ID); ok && cur.State == cloud.InstanceStopped {
			_, _ = w.cloud.StartInstance(user, inst.ID)
		}
	})
	_, err := w.cloud.StopInstance(user, inst.ID)
	must(t, err)
	w.waitStep(t, id, "stop", 60*time.Second)
	// The Node stays: stopped is not terminated.
	if _, err := env.Client.CoreV1().Nodes().Get(context.Background(), inst.PrivateDNSName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the stopped VM's Node: %v", err)
	}
	if r := stepOf(w.check(t, id), "start"); r.Status == StepPassed {
		t.Fatalf("start passed while the VM is stopped: %s", describe(r))
	}

	_, err = w.cloud.StartInstance(user, inst.ID)
	must(t, err)
	w.waitStep(t, id, "start", 60*time.Second)
	w.expectDone(t, id)
}

func TestExerciseIngressIPHostname(t *testing.T) {
	w := theWorld(t)
	const id = "ingress-ip-hostname"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.run(t, id, "expose", "create deployment")
	w.run(t, id, "expose", "expose deployment")
	ctx := context.Background()
	testutil.Eventually(t, 30*time.Second, "addr's EXTERNAL-IP", func() (bool, string) {
		svc, err := env.Client.CoreV1().Services("default").Get(ctx, "addr", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) > 0, ""
	})
	// A wrong answer does not pass; the right one (aws: hostname) does.
	res, err := w.svc.AnswerStep(ctx, id, "expose", "ip", "en")
	must(t, err)
	if res.Correct {
		t.Fatalf("ip was taken in the aws profile: %+v", res)
	}
	res, err = w.svc.AnswerStep(ctx, id, "expose", "hostname", "en")
	must(t, err)
	if !res.Correct {
		t.Fatalf("hostname was refused: %+v", res)
	}
	w.waitStep(t, id, "expose", 10*time.Second)
	w.expectDone(t, id)
	// The ending waits for the whole exercise: steps passed, quiz answered.
	d, err := w.svc.Get(ctx, id, "ja")
	must(t, err)
	if d.Ending != "" {
		t.Errorf("ending before the quiz was answered: %q", d.Ending)
	}
	for _, q := range w.svc.byID[id].Quiz {
		_, err := w.svc.Answer(ctx, id, q.ID, 0, "en")
		must(t, err)
	}
	if d, err = w.svc.Get(ctx, id, "ja"); err != nil || d.Ending != w.svc.byID[id].Ending.JA {
		t.Errorf("ending once done: %q, %v", d.Ending, err)
	}
	// The aws profile writes a host name, never an ip.
	out := w.run(t, id, "expose", "jsonpath")
	if !strings.Contains(out, `"hostname"`) || strings.Contains(out, `"ip"`) {
		t.Errorf("ingress in the aws profile: %s", out)
	}
}

func TestExerciseLBCAnnotations(t *testing.T) {
	w := theWorld(t)
	const id = "lbc-annotations"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.run(t, id, "external", "create deployment")
	w.run(t, id, "external", `"external"}}}`)
	w.waitStep(t, id, "external", 60*time.Second)
	// The webhook gave it the controller's class, so the Service
	// controller never saw it: no finalizer of its own, no load balancer;
	// the controller's finalizer is there.
	ctx := context.Background()
	svc, err := env.Client.CoreV1().Services("default").Get(ctx, "ann", metav1.GetOptions{})
	must(t, err)
	if slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) || !slices.Contains(svc.Finalizers, ccmnames.LBCFinalizer) {
		t.Errorf("ann's finalizers: %v", svc.Finalizers)
	}
	if _, ok := w.cloud.LookupLoadBalancer("a" + strings.ReplaceAll(string(svc.UID), "-", "")[:31]); ok {
		t.Error("the Service controller made a load balancer for a Service the webhook gave the controller's class")
	}

	w.run(t, id, "ip-targets", "expose deployment")
	w.waitStep(t, id, "ip-targets", 60*time.Second)
	w.expectDone(t, id)
	// As the step's explanation says: on the aws profile the Pods' IPs are
	// on no ENI, so the TargetGroupBinding reports it while the targets are
	// registered (resource_manager.go:214-217).
	testutil.Eventually(t, 30*time.Second, "a FailedNetworkReconcile event naming the pod ENI", func() (bool, string) {
		evs, err := env.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedNetworkReconcile"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "TargetGroupBinding" && strings.Contains(ev.Message, "cannot resolve pod ENI") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
}

func TestExerciseRateLimits(t *testing.T) {
	w := theWorld(t)
	const id = "rate-limits"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	must(t, w.cloud.SetFaults(cloud.Faults{QPS: 0.2, Burst: 1}))
	w.waitStep(t, id, "throttle", 10*time.Second)
	w.run(t, id, "many-services", "create deployment")
	for _, n := range []string{"burst-1", "burst-2", "burst-3", "burst-4"} {
		w.run(t, id, "many-services", "--name="+n)
	}
	w.waitStep(t, id, "many-services", 60*time.Second)
	if r := stepOf(w.check(t, id), "lift"); r.Status == StepPassed {
		t.Fatalf("lift passed while throttled: %s", describe(r))
	}

	must(t, w.cloud.SetFaults(cloud.Faults{}))
	// The hint: a fresh Service controller retries every Service at once.
	must(t, w.manager.Disable(profile.Service))
	must(t, w.manager.Enable(profile.Service))
	w.waitStep(t, id, "lift", 60*time.Second)
	w.expectDone(t, id)
}

func TestExerciseCloudProviderInterface(t *testing.T) {
	w := theWorld(t)
	const id = "cloudprovider-interface"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	ctx := context.Background()
	answerWhenLogged := func(step, value string) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, "the call in the log and the answer "+value+" taken", func() (bool, string) {
			res, err := w.svc.AnswerStep(ctx, id, step, value, "en")
			if err != nil {
				return false, err.Error()
			}
			return res.Correct, res.Detail
		})
	}
	w.launch(t)
	// The call log names the method: a wrong one is refused.
	testutil.Eventually(t, 60*time.Second, "CreateRoute in the call log", func() (bool, string) {
		for _, c := range w.cloud.Calls(0) {
			if c.Action == cloud.ActionCreateRoute && c.Method == "Routes.CreateRoute" && c.Caller == "route-controller" {
				return true, ""
			}
		}
		return false, ""
	})
	if res, err := w.svc.AnswerStep(ctx, id, "node-joins", "InstancesV2.InstanceMetadata", "en"); err != nil || res.Correct {
		t.Fatalf("a wrong method was taken: %+v %v", res, err)
	}
	answerWhenLogged("node-joins", "Routes.CreateRoute")
	w.waitStep(t, id, "node-joins", 60*time.Second)
	w.run(t, id, "service-created", "create deployment")
	w.run(t, id, "service-created", "expose deployment")
	// The bare method name is the action's own for CreateRoute: it
	// is not enough.
	if res, err := w.svc.AnswerStep(ctx, id, "service-created", "EnsureLoadBalancer", "en"); err != nil || res.Correct {
		t.Fatalf("the bare method name was taken: %+v %v", res, err)
	}
	answerWhenLogged("service-created", "LoadBalancer.EnsureLoadBalancer")
	w.waitStep(t, id, "service-created", 30*time.Second)
	w.expectDone(t, id)
}
