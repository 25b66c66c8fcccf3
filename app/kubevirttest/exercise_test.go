//go:build !unit

package kubevirttest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// TestExerciseKubevirtHandsOn plays exercise kubevirt-handson on the
// served kubevirt lab, as its solutions say: each step fails before its
// action (the management step until its answer is typed: the HOLDER of
// the CCM's Lease, read with the management cluster's kubeconfig), and
// passes after it.
func TestExerciseKubevirtHandsOn(t *testing.T) {
	l := servedLab(t)
	ctx := context.Background()
	const id = "kubevirt-handson"
	infra, err := kubernetes.NewForConfig(l.Config.Infra)
	if err != nil {
		t.Fatal(err)
	}
	store, err := progress.Open(filepath.Join(t.TempDir(), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := exercises.New(exercises.Config{
		Env: check.Env{Client: l.Client, Cloud: l.Cloud, Flow: l.Observer, Controllers: l.Manager, Dataplane: l.Dataplane,
			Profile: l.Config.Profile, History: l.History, Infra: infra},
		Store: store, Nodes: servedNodes, SettleTimeout: 90 * time.Second, RestoreSystem: l.RestoreKubeSystem,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shell(t, "kubectl delete svc web --ignore-not-found\nkubectl delete deployment web --ignore-not-found")
	})

	report := func() exercises.CheckReport {
		t.Helper()
		rep, err := svc.Check(ctx, id, "en")
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	stepOf := func(rep exercises.CheckReport, step string) exercises.StepResult {
		for _, s := range rep.Steps {
			if s.ID == step {
				return s
			}
		}
		t.Fatalf("no step %s", step)
		return exercises.StepResult{}
	}
	// failsFirst: step is current and fails, and so does at least one of
	// its checks unless the step waits for its answer.
	failsFirst := func(step string, answered bool) {
		t.Helper()
		rep := report()
		r := stepOf(rep, step)
		if rep.CurrentStep != step || r.Status != exercises.StepFailed {
			t.Fatalf("before the action: current %q, %s %s %+v", rep.CurrentStep, step, r.Status, r.Checks)
		}
		if answered {
			return
		}
		for _, c := range r.Checks {
			if !c.Pass {
				return
			}
		}
		t.Fatalf("%s: every check passes before the action: %+v", step, r.Checks)
	}
	waitPassed := func(step string, timeout time.Duration) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			rep := report()
			r := stepOf(rep, step)
			if r.Status == exercises.StepPassed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not pass: %s %+v", step, r.Status, r.Checks)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	t.Run("management", func(t *testing.T) {
		// No answer typed: the step fails although the CCM does run
		// outside the tenant (a state, not the student's doing).
		failsFirst("management", true)
		r := stepOf(report(), "management")
		for _, c := range r.Checks {
			if c.Kind == "ccmOutsideTenant" && !c.Pass {
				t.Errorf("ccmOutsideTenant: %+v", c)
			}
		}
		// Names a student could guess without the management side.
		for _, guess := range []string{"kubevirt-cloud-controller-manager", "cloud-controller-manager", l.KubevirtCluster()} {
			res, err := svc.AnswerStep(ctx, id, "management", guess, "en")
			if err != nil || res.Correct {
				t.Errorf("answer %q: %+v %v", guess, res, err)
			}
		}
		// The solution: the HOLDER column of the management cluster's
		// Leases, read with its kubeconfig.
		infraKubeconfig := filepath.Join(env.DataDir, controlplane.InfraKubeconfigName)
		out := shell(t, "kubectl --kubeconfig "+infraKubeconfig+" get lease -A")
		var holder string
		for _, ln := range strings.Split(out, "\n") {
			if f := strings.Fields(ln); len(f) == 4 && f[0] == l.KubevirtCluster() && f[1] == "cloud-controller-manager" {
				holder = f[2]
			}
		}
		if holder == "" {
			t.Fatalf("no cloud-controller-manager Lease in:\n%s", out)
		}
		res, err := svc.AnswerStep(ctx, id, "management", holder, "en")
		if err != nil || !res.Correct {
			t.Fatalf("answer %q: %+v %v", holder, res, err)
		}
		waitPassed("management", 30*time.Second)
	})

	t.Run("expose", func(t *testing.T) {
		failsFirst("expose", false)
		shell(t, "kubectl create deployment web --image=nginx:1.29 --port=80\nkubectl expose deployment web --type=LoadBalancer --port=80")
		waitPassed("expose", 90*time.Second)
	})

	t.Run("nodeport", func(t *testing.T) {
		failsFirst("nodeport", false)
		// The page's request panel: one request through the NodePort,
		// sent again until the Pod answers.
		svcWeb, err := env.Client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) == 0 {
			t.Fatalf("nodes: %v", err)
		}
		req := dataplane.Request{Kind: dataplane.KindNodePort, Node: nodes.Items[0].Name, Port: svcWeb.Spec.Ports[0].NodePort, Origin: dataplane.OriginAPI}
		deadline := time.Now().Add(90 * time.Second)
		for {
			tr, err := l.Dataplane.Do(ctx, req)
			if err == nil && tr.Status == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the NodePort does not answer: %+v %v", tr, err)
			}
			time.Sleep(time.Second)
		}
		waitPassed("nodeport", 30*time.Second)
		if rep := report(); !rep.Done {
			t.Errorf("not done: %+v", rep)
		}
	})
}
