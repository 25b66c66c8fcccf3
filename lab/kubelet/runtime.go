package kubelet

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Runtime runs, for real and inside the lab's process, the container of
// the Pods it claims: the lab's kubelet is their container runtime. Every
// other Pod's containers are imaginary (reported running at once).
//
// The one user is the cloud-controller-manager's DaemonSet Pod: its
// kubelet starts the embedded CCM when the Pod starts, with the
// container's arguments, and stops it when the Pod goes, so the CCM runs
// exactly while its Pod runs.
type Runtime interface {
	// Handles reports whether the runtime runs pod's only container.
	Handles(pod *v1.Pod) bool
	// Run runs the container. It returns when the container exits: nil is
	// exit code 0, an error exit code 1 (its text is the termination
	// message). When ctx ends (the Pod is deleted, its node stops) Run must
	// stop the container and return.
	Run(ctx context.Context, pod *v1.Pod, c v1.Container) error
	// LogKey is where the container's log lives in Config.Logs.
	LogKey(pod *v1.Pod, container string) string
}

// The kubelet's crash-loop back-off (pkg/kubelet/kubelet.go: backOffPeriod
// 10s, MaxContainerBackOff 300s): doubled after every exit, reset after a
// container ran 10 minutes.
const (
	defaultCrashBackoff    = 10 * time.Second
	defaultMaxCrashBackoff = 300 * time.Second
	backoffResetAfter      = 10 * time.Minute
)

// container is one Runtime-run container's state, kept per Pod UID.
type container struct {
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run returned
	running  bool
	started  metav1.Time // of the current (or last) run
	restarts int32
	// last exit, when the container has exited at least once
	exited      bool
	lastStarted metav1.Time
	exitCode    int32
	message     string
	finished    metav1.Time
	backoff     time.Duration
	retryAt     time.Time // in back-off until then
}

// runtimePods tracks the containers the Runtime runs.
type runtimePods struct {
	mu   sync.Mutex
	byID map[types.UID]*container
}

func (m *Manager) handled(pod *v1.Pod) bool {
	return m.cfg.Runtime != nil && len(pod.Spec.Containers) == 1 && !IsMirrorPod(pod) && m.cfg.Runtime.Handles(pod)
}

// runtimeExited reports whether pod's container, run by the Runtime, has
// exited at least once: kubectl logs --previous then has a run to show.
func (m *Manager) runtimeExited(pod *v1.Pod) bool {
	if !m.handled(pod) {
		return false
	}
	m.rt.mu.Lock()
	defer m.rt.mu.Unlock()
	c := m.rt.byID[pod.UID]
	return c != nil && c.exited
}

// stopContainer stops pod's container, if it runs, and waits up to grace
// for it to return.
func (m *Manager) stopContainer(uid types.UID, grace time.Duration) {
	m.rt.mu.Lock()
	c := m.rt.byID[uid]
	delete(m.rt.byID, uid)
	m.rt.mu.Unlock()
	if c == nil || c.cancel == nil {
		return
	}
	c.cancel()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		m.log.Warn("container did not stop within its grace period", "pod", uid, "grace", grace)
	}
}

// syncContainer starts pod's container unless it runs or is in back-off,
// and returns a copy of its state for the status.
func (m *Manager) syncContainer(ctx context.Context, pod *v1.Pod, key string) container {
	now := m.cfg.Clock.Now()
	m.rt.mu.Lock()
	defer m.rt.mu.Unlock()
	c := m.rt.byID[pod.UID]
	if c == nil {
		c = &container{}
		m.rt.byID[pod.UID] = c
	}
	if c.running {
		return *c
	}
	if now.Before(c.retryAt) {
		// Every sync in back-off arms the restart again: the delaying
		// queue keeps one ready time per key, the earliest, so a rate
		// limited retry (a status conflict) would replace the one the
		// exit armed and the container would never restart.
		m.queue.AddAfter(key, c.retryAt.Sub(now))
		return *c
	}
	if c.exited {
		c.restarts++ // a new container of the same Pod
	}
	runCtx, cancel := context.WithCancel(ctx)
	c.cancel, c.done, c.running, c.started = cancel, make(chan struct{}), true, metav1.NewTime(now)
	spec := pod.Spec.Containers[0]
	p := pod.DeepCopy()
	go func() {
		err := m.cfg.Runtime.Run(runCtx, p, spec)
		stopped := runCtx.Err() != nil
		cancel()
		m.rt.mu.Lock()
		end := m.cfg.Clock.Now()
		c.running, c.exited, c.finished, c.lastStarted = false, true, metav1.NewTime(end), c.started
		c.exitCode, c.message = 0, ""
		if err != nil {
			c.exitCode, c.message = 1, err.Error()
		}
		if !stopped {
			if end.Sub(c.started.Time) > backoffResetAfter {
				c.backoff = 0
			}
			c.backoff = min(cmp.Or(c.backoff*2, m.cfg.CrashBackoff), m.cfg.MaxCrashBackoff)
			c.retryAt = end.Add(c.backoff)
		}
		m.rt.mu.Unlock()
		close(c.done)
		if !stopped {
			m.log.Info("container exited; restarting after back-off", "pod", key, "exitCode", c.exitCode, "backoff", c.backoff)
			m.queue.Add(key)
			m.queue.AddAfter(key, c.backoff)
		}
	}()
	return *c
}

// setRuntimeStatus writes the status of a Pod whose container the Runtime
// runs: running and ready while it runs; after an exit, waiting in
// CrashLoopBackOff with the exit as its last state, as a kubelet reports a
// container that keeps failing.
func setRuntimeStatus(pod *v1.Pod, c container, now metav1.Time) {
	st := &pod.Status
	cs := &st.ContainerStatuses[0]
	cs.RestartCount = c.restarts
	cs.LastTerminationState = v1.ContainerState{}
	if c.exited && (c.restarts > 0 || !c.running) {
		reason := "Completed"
		if c.exitCode != 0 {
			reason = "Error"
		}
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			ExitCode: c.exitCode, Reason: reason, Message: c.message, StartedAt: c.lastStarted, FinishedAt: c.finished, ContainerID: cs.ContainerID,
		}
	}
	if c.running {
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: c.started}}
		return
	}
	cs.Ready, cs.Started = false, ptr.To(false)
	cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
		Reason:  "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", c.backoff, cs.Name, pod.Name, pod.Namespace, pod.UID),
	}}
	msg := "containers with unready status: [" + containerNames(pod) + "]"
	setPodCondition(st, v1.ContainersReady, v1.ConditionFalse, "ContainersNotReady", msg, pod.Generation, now)
	setPodCondition(st, v1.PodReady, v1.ConditionFalse, "ContainersNotReady", msg, pod.Generation, now)
}

// runtimeStatusIsCurrent compares what setRuntimeStatus would write with
// pod's status, so an unchanged container costs no write.
func runtimeStatusIsCurrent(pod *v1.Pod, hostIP, podIP string, c container) bool {
	if pod.Status.StartTime == nil || len(pod.Status.ContainerStatuses) != 1 {
		return false
	}
	want := pod.DeepCopy()
	now := metav1.Now()
	setRunningStatus(want, hostIP, podIP, *pod.Status.StartTime)
	setRuntimeStatus(want, c, now)
	for _, t := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		a, b := findPodCondition(&pod.Status, t), findPodCondition(&want.Status, t)
		if a == nil || b == nil || a.Status != b.Status {
			return false
		}
	}
	return pod.Status.Phase == v1.PodRunning && pod.Status.PodIP == podIP &&
		apiequality.Semantic.DeepEqual(pod.Status.ContainerStatuses, want.Status.ContainerStatuses)
}

// runtimeGrace bounds the wait for a container whose Pod vanished without
// the kubelet finishing its deletion (the default grace period).
const runtimeGrace = 30 * time.Second

// gracePeriod is how long a deleted Pod's container gets to stop.
func gracePeriod(pod *v1.Pod) time.Duration {
	if s := pod.DeletionGracePeriodSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return runtimeGrace
}

// inBackOff reports whether pod's status already shows its container
// waiting in back-off after the same number of restarts.
func inBackOff(pod *v1.Pod, restarts int32) bool {
	if len(pod.Status.ContainerStatuses) == 0 {
		return false
	}
	cs := pod.Status.ContainerStatuses[0]
	return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" && cs.RestartCount == restarts
}
