package exercises

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// The tests in this file need no control plane either (service_test.go).

// Reset takes back the VMs a student launched, with their Nodes; the
// lab's own VMs, the control plane's and those whose launcher is unknown
// stay.
func TestResetTerminatesLaunchedVMs(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, "aws", fakeControllers{"node": true})
	s, err := New(Config{Env: env, Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	launch := func(caller string, tags map[string]string) cloud.Instance {
		t.Helper()
		in := cloud.RunInstanceInput{Tags: tags}
		run := ctx
		if caller != "" {
			run = cloud.WithCaller(ctx, caller)
		}
		inst, err := env.Cloud.RunInstance(run, in)
		if err != nil {
			t.Fatal(err)
		}
		if inst.LaunchedBy != caller {
			t.Fatalf("launched by %q, the instance says %q", caller, inst.LaunchedBy)
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.PrivateDNSName}}
		if _, err := env.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return inst
	}
	lab := launch("ccmlab", nil)
	byReset := launch(ResetCaller, nil)
	unknown := launch("", nil)
	controlPlane := launch(cloud.CallerUser, map[string]string{kubelet.ControlPlaneTag: "1"})
	student := launch(cloud.CallerUser, nil)
	stopped := launch(cloud.CallerUser, nil)
	if _, err := env.Cloud.StopInstance(cloud.WithCaller(ctx, cloud.CallerUser), stopped.ID); err != nil {
		t.Fatal(err)
	}

	if err := s.terminateLaunched(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		inst cloud.Instance
		gone bool
	}{{lab, false}, {byReset, false}, {unknown, false}, {controlPlane, false}, {student, true}, {stopped, true}} {
		now, ok := env.Cloud.LookupInstance(c.inst.ID)
		if !ok {
			t.Fatalf("%s is not in the cloud", c.inst.ID)
		}
		_, err := env.Client.CoreV1().Nodes().Get(ctx, c.inst.PrivateDNSName, metav1.GetOptions{})
		nodeGone := apierrors.IsNotFound(err)
		if (now.State == cloud.InstanceTerminated) != c.gone || nodeGone != c.gone {
			t.Errorf("VM launched by %q: state %s, Node gone %v; want gone %v", c.inst.LaunchedBy, now.State, nodeGone, c.gone)
		}
	}
	var byResetCalls int
	for _, call := range env.Cloud.Calls(0) {
		if call.Action == cloud.ActionTerminateInstances && call.Caller == ResetCaller {
			byResetCalls++
		}
	}
	if byResetCalls != 2 {
		t.Errorf("the call log has %d TerminateInstances by the reset, want 2", byResetCalls)
	}
	// The reset says what it took away: both student VMs by ID, in both
	// languages, and nothing of the lab's own.
	note := removedNote(s.removed)
	for _, text := range []string{note.JA, note.EN} {
		for _, c := range []struct {
			inst  cloud.Instance
			named bool
		}{{student, true}, {stopped, true}, {lab, false}, {byReset, false}, {controlPlane, false}} {
			if strings.Contains(text, c.inst.ID) != c.named {
				t.Errorf("the reset's note %q: names %s %v, want %v", text, c.inst.ID, !c.named, c.named)
			}
		}
	}
}
