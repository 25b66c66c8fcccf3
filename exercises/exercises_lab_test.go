package exercises

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cloudproviderapi "k8s.io/cloud-provider/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// These tests drive the real lab (control plane, kubelets, CCM, data
// plane) through each exercise: right after a reset, doing nothing passes
// no step (and every step's checks fail on their own); the intended
// solution passes every step; some exercises also try a wrong way and see
// it refused. Kubernetes objects are created with the exercises' own
// kubectl lines, run through the console with the real ccmlab binary.

func (w *world) reset(t *testing.T, id string) {
	t.Helper()
	begin := time.Now()
	if err := w.svc.Reset(context.Background(), id); err != nil {
		t.Fatalf("reset %s: %v", id, err)
	}
	t.Logf("reset %s took %s", id, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() { w.restore(t, id) })
}

// restore puts the lab back for the next test: no faults, every switch at
// its default, the exercise's objects gone.
func (w *world) restore(t *testing.T, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := w.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Error(err)
	}
	ex := w.svc.byID[id]
	if err := w.svc.deleteObjects(ctx, ex.Setup.Delete); err != nil {
		t.Errorf("cleaning up %s: %v", id, err)
	}
	if err := w.svc.applySwitches(w.svc.desiredSwitches(&format.Exercise{})); err != nil {
		t.Error(err)
	}
}

func (w *world) check(t *testing.T, id string) CheckReport {
	t.Helper()
	rep, err := w.svc.Check(context.Background(), id, "en")
	if err != nil {
		t.Fatalf("check %s: %v", id, err)
	}
	return rep
}

func stepOf(rep CheckReport, step string) StepResult {
	for _, s := range rep.Steps {
		if s.ID == step {
			return s
		}
	}
	return StepResult{}
}

func describe(r StepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%s", r.ID, r.Status)
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "\n    %s pass=%v: %s", c.Kind, c.Pass, c.Detail)
	}
	return b.String()
}

// waitStep checks the exercise until step has passed.
func (w *world) waitStep(t *testing.T, id, step string, timeout time.Duration) CheckReport {
	t.Helper()
	begin := time.Now()
	var last CheckReport
	for time.Since(begin) < timeout {
		last = w.check(t, id)
		r := stepOf(last, step)
		if r.ID == "" {
			t.Fatalf("exercise %s has no step %s", id, step)
		}
		if r.Status == StepPassed {
			if r.Explanation == "" {
				t.Errorf("step %s passed without an explanation", step)
			}
			t.Logf("%s/%s passed after %s", id, step, time.Since(begin).Round(time.Millisecond))
			return last
		}
		time.Sleep(500 * time.Millisecond)
	}
	var all []string
	for _, s := range last.Steps {
		all = append(all, describe(s))
	}
	t.Fatalf("%s: step %s did not pass within %s:\n  %s", id, step, timeout, strings.Join(all, "\n  "))
	return last
}

// expectNothingPasses: straight after a reset no step passes, and each
// step's checks, evaluated on their own (ignoring the step order), fail.
func (w *world) expectNothingPasses(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	ex := w.svc.byID[id]
	start, err := w.svc.startOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ex.Steps {
		failed := false
		for _, c := range st.Checks {
			if !check.Evaluate(ctx, w.svc.cfg.Env, start, c).Pass {
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

func (w *world) expectDone(t *testing.T, id string) {
	t.Helper()
	rep := w.check(t, id)
	for _, s := range rep.Steps {
		if s.Status != StepPassed || s.PassedAt.IsZero() || s.Attempts == 0 {
			t.Errorf("%s/%s: %+v", id, s.ID, s)
		}
	}
	if rep.CurrentStep != "" {
		t.Errorf("current step %q after finishing", rep.CurrentStep)
	}
}

// stepLine returns the exercise's command of step that contains sub.
func (w *world) stepLine(t *testing.T, id, step, sub string) string {
	t.Helper()
	for _, st := range w.svc.byID[id].Steps {
		if st.ID != step {
			continue
		}
		for _, c := range st.Commands {
			if strings.Contains(c, sub) {
				return c
			}
		}
	}
	t.Fatalf("%s/%s has no command with %q", id, step, sub)
	return ""
}

// kubectl runs a line through the console with the real binary.
func (w *world) kubectl(t *testing.T, line string) string {
	t.Helper()
	c, err := console.New(console.Config{DataDir: env.DataDir, Binary: ccmlabBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), line)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d\n%s", line, res.ExitCode, res.Output)
	}
	return res.Output
}

// run runs the exercise's own command (the one containing sub).
func (w *world) run(t *testing.T, id, step, sub string) string {
	t.Helper()
	return w.kubectl(t, w.stepLine(t, id, step, sub))
}

func (w *world) launch(t *testing.T) cloud.Instance {
	t.Helper()
	inst, err := w.cloud.RunInstance(cloud.WithCaller(context.Background(), "user"), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func (w *world) terminate(t *testing.T, id string) {
	t.Helper()
	if _, err := w.cloud.TerminateInstance(cloud.WithCaller(context.Background(), "user"), id); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestExerciseNodeInit(t *testing.T) {
	w := theWorld(t)
	const id = "node-init"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	// The wrong way: a VM joins while the Node controller is off. It is
	// registered, but nothing of the cloud is written.
	must(t, w.manager.Disable(profile.Node))
	inst := w.launch(t)
	w.waitStep(t, id, "launch", 30*time.Second)
	time.Sleep(2 * time.Second)
	if r := stepOf(w.check(t, id), "provider-id"); r.Status != StepFailed {
		t.Fatalf("provider-id without a Node controller: %s", describe(r))
	}

	must(t, w.manager.Enable(profile.Node))
	w.waitStep(t, id, "taint-gone", 60*time.Second)
	w.expectDone(t, id)

	// The chapter's command shows the new Node's providerID as written.
	out := w.run(t, id, "provider-id", "providerID")
	if want := inst.PrivateDNSName + "\taws:///" + inst.Zone + "/" + inst.ID; !strings.Contains(out, want) {
		t.Errorf("providerID listing lacks %q:\n%s", want, out)
	}
}

func TestExerciseNoCCM(t *testing.T) {
	w := theWorld(t)
	const id = "no-ccm"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	w.run(t, id, "stuck", "create deployment")
	w.waitStep(t, id, "stuck", 30*time.Second)
	if out := w.run(t, id, "stuck", "describe pods"); !strings.Contains(out, "untolerated taint") {
		t.Errorf("describe pods does not show the taint:\n%s", out)
	}

	// The wrong way: take the taint off by hand. The Pod runs, but the
	// step is about the Node controller, which is still off.
	ctx := context.Background()
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, n := range nodes.Items {
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := env.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Taints = slices.DeleteFunc(cur.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
			_, err = env.Client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
	}
	// Barrier: the step's own podsRunning check passes, which is all the
	// wrong way can achieve; with that seen, the step must still fail.
	var r StepResult
	testutil.Eventually(t, 60*time.Second, "the Pod running after the taint came off by hand", func() (bool, string) {
		r = stepOf(w.check(t, id), "node-controller-on")
		for _, c := range r.Checks {
			if c.Kind == "podsRunning" && c.Pass {
				return true, ""
			}
		}
		return false, describe(r)
	})
	if r.Status != StepFailed {
		t.Fatalf("removing the taint by hand passed: %s", describe(r))
	}

	// The right way.
	must(t, w.svc.Reset(ctx, id))
	w.run(t, id, "stuck", "create deployment")
	w.waitStep(t, id, "stuck", 30*time.Second)
	must(t, w.manager.Enable(profile.Node))
	w.waitStep(t, id, "node-controller-on", 60*time.Second)
	w.expectDone(t, id)
}

func TestExercisePendingOnPurpose(t *testing.T) {
	w := theWorld(t)
	const id = "pending-on-purpose"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	must(t, w.manager.Disable(profile.Service))
	w.waitStep(t, id, "service-off", 10*time.Second)
	w.run(t, id, "expose", "create deployment")
	w.run(t, id, "expose", "expose deployment")
	w.waitStep(t, id, "expose", 30*time.Second)
	if out := w.run(t, id, "expose", "{.status}"); out != `{"loadBalancer":{}}` {
		t.Errorf("status = %q", out)
	}
	if out := w.run(t, id, "expose", "get svc web"); !strings.Contains(out, "<pending>") {
		t.Errorf("get svc web:\n%s", out)
	}
	w.waitStep(t, id, "still-answers", 60*time.Second)

	must(t, w.manager.Enable(profile.Service))
	w.waitStep(t, id, "service-on", 60*time.Second)
	w.expectDone(t, id)
	if out := w.run(t, id, "service-on", "describe svc"); !strings.Contains(out, "EnsuredLoadBalancer") {
		t.Errorf("describe svc web lacks EnsuredLoadBalancer:\n%s", out)
	}
}

func TestExerciseIAMDeny(t *testing.T) {
	w := theWorld(t)
	const id = "iam-deny"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	must(t, w.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}))
	w.waitStep(t, id, "deny", 10*time.Second)
	w.run(t, id, "failed", "create deployment")
	w.run(t, id, "failed", "expose deployment")
	w.waitStep(t, id, "failed", 60*time.Second)
	if out := w.run(t, id, "failed", "describe svc"); !strings.Contains(out, "SyncLoadBalancerFailed") || !strings.Contains(out, "AccessDenied") {
		t.Errorf("describe svc iam-web:\n%s", out)
	}
	// Still denied: the last step does not pass.
	if r := stepOf(w.check(t, id), "fix"); r.Status != StepFailed {
		t.Fatalf("fix passed while still denied: %s", describe(r))
	}
	must(t, w.cloud.SetFaults(cloud.Faults{}))
	w.waitStep(t, id, "fix", 90*time.Second)
	w.expectDone(t, id)
}

func TestExerciseLBClass(t *testing.T) {
	w := theWorld(t)
	const id = "lb-class"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	w.run(t, id, "unhandled", "create deployment")
	w.run(t, id, "unhandled", "--overrides")
	w.waitStep(t, id, "unhandled", 30*time.Second)
	must(t, w.manager.Enable(controllers.AddonLBC))
	w.waitStep(t, id, "enable-lbc", 60*time.Second)
	w.run(t, id, "instance-mode", "--name=nlb-instance")
	w.waitStep(t, id, "instance-mode", 60*time.Second)
	w.expectDone(t, id)
}

func TestExerciseLocalTraffic(t *testing.T) {
	w := theWorld(t)
	const id = "local-traffic"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	w.run(t, id, "extra-hop", "create deployment")
	w.run(t, id, "extra-hop", "expose deployment")
	w.waitStep(t, id, "extra-hop", 60*time.Second)
	w.run(t, id, "local", "patch svc")
	w.waitStep(t, id, "local", 60*time.Second)
	w.waitStep(t, id, "health", 60*time.Second)

	// One more replica than there are nodes.
	nodes, err := env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	must(t, err)
	line := strings.Replace(w.stepLine(t, id, "uneven", "scale"), "--replicas=4", fmt.Sprintf("--replicas=%d", len(nodes.Items)+1), 1)
	w.kubectl(t, line)
	w.waitStep(t, id, "uneven", 90*time.Second)
	w.expectDone(t, id)
}

func TestExerciseRoutes(t *testing.T) {
	w := theWorld(t)
	const id = "routes"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	must(t, w.manager.Disable(profile.Route))
	inst := w.launch(t)
	w.waitStep(t, id, "no-route", 60*time.Second)
	must(t, w.manager.Enable(profile.Route))
	w.waitStep(t, id, "route-back", 60*time.Second)
	w.terminate(t, inst.ID)
	w.waitStep(t, id, "node-leaves", 90*time.Second)
	w.expectDone(t, id)
}

func TestExerciseTerminatedVM(t *testing.T) {
	w := theWorld(t)
	const id = "terminated-vm"
	w.reset(t, id)
	w.expectNothingPasses(t, id)

	must(t, w.manager.Disable(profile.NodeLifecycle))
	victim := runningInstances(w.cloud)[0]
	w.terminate(t, victim.ID)
	w.waitStep(t, id, "not-ready", 60*time.Second)
	if out := w.run(t, id, "not-ready", "get nodes"); !strings.Contains(out, "NotReady") {
		t.Errorf("get nodes shows no NotReady node:\n%s", out)
	}
	must(t, w.manager.Enable(profile.NodeLifecycle))
	w.waitStep(t, id, "deleted", 60*time.Second)
	w.expectDone(t, id)

	// The wrong way: terminate with the node-lifecycle controller on. The
	// Node goes away before anyone sees it NotReady, and the first step,
	// which asks for the controller off, does not pass.
	must(t, w.svc.Reset(context.Background(), id))
	victim = runningInstances(w.cloud)[0]
	w.terminate(t, victim.ID)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := env.Client.CoreV1().Nodes().Get(context.Background(), victim.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Node of the terminated VM was not deleted")
		}
		time.Sleep(500 * time.Millisecond)
	}
	rep := w.check(t, id)
	if r := stepOf(rep, "not-ready"); r.Status != StepFailed {
		t.Errorf("not-ready passed the wrong way: %s", describe(r))
	}
	if r := stepOf(rep, "deleted"); r.Status != StepLocked {
		t.Errorf("deleted: %s", describe(r))
	}
}

func TestExerciseReview(t *testing.T) {
	w := theWorld(t)
	const id = "review"
	ctx := context.Background()
	must(t, w.svc.Reset(ctx, id))
	if rep := w.check(t, id); rep.Done || len(rep.Steps) != 0 {
		t.Fatalf("a fresh quiz is done: %+v", rep)
	}
	ex := w.svc.byID[id]
	for _, q := range ex.Quiz {
		right := slices.IndexFunc(q.Choices, func(c format.Choice) bool { return c.Correct })
		wrong := (right + 1) % len(q.Choices)
		res, err := w.svc.Answer(ctx, id, q.ID, wrong, "ja")
		must(t, err)
		if res.Correct || res.Why != q.Choices[wrong].Why.JA || res.View.Choices[right].Why != "" {
			t.Errorf("%s wrong answer: %+v", q.ID, res)
		}
		if rep := w.check(t, id); rep.Done {
			t.Fatal("done with a wrong answer")
		}
		res, err = w.svc.Answer(ctx, id, q.ID, right, "en")
		must(t, err)
		if !res.Correct || res.Why != q.Choices[right].Why.EN {
			t.Errorf("%s right answer: %+v", q.ID, res)
		}
		for i, c := range res.View.Choices {
			if c.Why == "" || c.Correct == nil || *c.Correct != (i == right) {
				t.Errorf("%s: after the right answer choice %d shows %+v", q.ID, i, c)
			}
		}
	}
	if rep := w.check(t, id); !rep.Done {
		t.Fatalf("not done after answering everything: %+v", rep)
	}
	list, err := w.svc.List(ctx, "ja")
	must(t, err)
	i := slices.IndexFunc(list, func(s Summary) bool { return s.ID == id })
	if !list[i].Done || list[i].QuestionsCorrect != len(ex.Quiz) || list[i].Title != ex.Title.JA {
		t.Errorf("summary: %+v", list[i])
	}
	// Reset clears the answers and leaves the lab alone.
	must(t, w.svc.Reset(ctx, id))
	if d, _ := w.svc.Get(ctx, id, "en"); d.Quiz[0].Answered || d.Done {
		t.Errorf("answers survive a reset: %+v", d.Quiz[0])
	}

	// Bad input.
	if _, err := w.svc.Answer(ctx, id, "nope", 0, "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown question: %v", err)
	}
	if _, err := w.svc.Answer(ctx, id, ex.Quiz[0].ID, 99, "en"); !errors.Is(err, ErrBadInput) {
		t.Errorf("choice out of range: %v", err)
	}
	if _, err := w.svc.Answer(ctx, "nope", "q", 0, "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown exercise: %v", err)
	}
}

func TestServiceViews(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	for _, lang := range []string{"ja", "en"} {
		list, err := w.svc.List(ctx, lang)
		must(t, err)
		if len(list) != 9 {
			t.Fatalf("%d exercises", len(list))
		}
		for _, s := range list {
			if !s.Available {
				t.Errorf("%s unavailable in an aws lab with lbc: %s", s.ID, s.Unavailable)
			}
			d, err := w.svc.Get(ctx, s.ID, lang)
			must(t, err)
			if d.Title == "" || d.Goal == "" || d.Setup == "" {
				t.Errorf("%s/%s: empty texts", s.ID, lang)
			}
			for _, st := range d.Steps {
				if !st.Passed && st.Explanation != "" {
					t.Errorf("%s/%s: the explanation shows before the step passed", s.ID, st.ID)
				}
				for _, c := range st.Commands {
					if _, err := console.Parse(c.Line); (err == nil) != c.Console {
						t.Errorf("%s: console flag of %q is %v", s.ID, c.Line, c.Console)
					}
				}
			}
		}
	}
	if _, err := w.svc.Get(ctx, "nope", "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown exercise: %v", err)
	}
	if _, err := w.svc.List(ctx, "fr"); !errors.Is(err, ErrBadInput) {
		t.Errorf("unknown language: %v", err)
	}
	if _, err := w.svc.Check(ctx, "nope", "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("check unknown exercise: %v", err)
	}
	if err := w.svc.Reset(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("reset unknown exercise: %v", err)
	}
}

// The console runs the embedded kubectl of the real binary against the
// lab, and nothing else.
func TestConsoleRunsKubectl(t *testing.T) {
	theWorld(t)
	bin := ccmlabBinary(t)
	ctx := context.Background()
	c, err := console.New(console.Config{DataDir: env.DataDir, Binary: bin})
	must(t, err)

	res, err := c.Run(ctx, "kubectl get ns")
	must(t, err)
	if res.ExitCode != 0 || !strings.Contains(res.Output, "default") || !strings.Contains(res.Output, "kube-system") {
		t.Fatalf("kubectl get ns: %+v", res)
	}
	res, err = c.Run(ctx, `kubectl get ns default -o jsonpath='{.metadata.name}{"\n"}'`)
	must(t, err)
	if res.Output != "default\n" {
		t.Errorf("jsonpath output %q", res.Output)
	}
	res, err = c.Run(ctx, "kubectl get svc no-such-service")
	must(t, err)
	if res.ExitCode != 1 || !strings.Contains(res.Output, "not found") {
		t.Errorf("a kubectl error: %+v", res)
	}
	if _, err := c.Run(ctx, "kubectl get ns | wc -l"); !errors.Is(err, console.ErrRefused) {
		t.Errorf("a pipe: %v", err)
	}

	short, err := console.New(console.Config{DataDir: env.DataDir, Binary: bin, Timeout: 2 * time.Second, MaxOutput: 300})
	must(t, err)
	res, err = short.Run(ctx, "kubectl wait --for=delete ns/default --timeout=60s")
	must(t, err)
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("a command that never ends: %+v", res)
	}
	res, err = short.Run(ctx, "kubectl api-resources")
	must(t, err)
	if !res.Truncated || len(res.Output) > 400 {
		t.Errorf("long output: truncated=%v len=%d", res.Truncated, len(res.Output))
	}

	// kubectl ran in an empty directory inside the data dir and left it
	// empty.
	entries, err := os.ReadDir(filepath.Join(env.DataDir, "console"))
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("the console's working dir is not empty: %v", entries)
	}
}
