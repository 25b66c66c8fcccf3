package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// podPhase follows getPhase (pkg/kubelet/kubelet_pods.go, v1.37.2) for
// Pods without sidecars.
func TestPodPhase(t *testing.T) {
	running := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	exited := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	backoff := v1.ContainerStatus{
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}},
	}
	creating := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	for _, tc := range []struct {
		name       string
		policy     v1.RestartPolicy
		cs         []v1.ContainerStatus
		initDone   bool
		initFailed bool
		want       v1.PodPhase
	}{
		{"init running", v1.RestartPolicyAlways, []v1.ContainerStatus{creating}, false, false, v1.PodPending},
		{"init failed under Never", v1.RestartPolicyNever, []v1.ContainerStatus{creating}, false, true, v1.PodFailed},
		{"creating", v1.RestartPolicyAlways, []v1.ContainerStatus{creating}, true, false, v1.PodPending},
		{"running", v1.RestartPolicyAlways, []v1.ContainerStatus{running, exited(0)}, true, false, v1.PodRunning},
		{"back-off", v1.RestartPolicyAlways, []v1.ContainerStatus{backoff}, true, false, v1.PodRunning},
		{"all succeeded", v1.RestartPolicyNever, []v1.ContainerStatus{exited(0), exited(0)}, true, false, v1.PodSucceeded},
		{"one failed", v1.RestartPolicyNever, []v1.ContainerStatus{exited(0), exited(3)}, true, false, v1.PodFailed},
		{"OnFailure succeeded", v1.RestartPolicyOnFailure, []v1.ContainerStatus{exited(0)}, true, false, v1.PodSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(tc.policy, tc.cs, tc.initDone, tc.initFailed); got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestWillRestart(t *testing.T) {
	for _, tc := range []struct {
		policy v1.RestartPolicy
		code   int32
		want   bool
	}{
		{v1.RestartPolicyAlways, 0, true},
		{v1.RestartPolicyAlways, 1, true},
		{v1.RestartPolicyOnFailure, 0, false},
		{v1.RestartPolicyOnFailure, 2, true},
		{v1.RestartPolicyNever, 1, false},
	} {
		if got := willRestart(tc.policy, tc.code); got != tc.want {
			t.Errorf("willRestart(%s, %d) = %v", tc.policy, tc.code, got)
		}
	}
}
