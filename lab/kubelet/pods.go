package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/kube"
)

// errPodGone: the Pod was deleted before it got an address.
var errPodGone = errors.New("pod is gone")

func (m *Manager) podWorker() {
	for m.processNextPod() {
	}
}

func (m *Manager) processNextPod() bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	if err := m.syncPod(key); err != nil {
		// Conflicts happen and heal on retry; only a Pod that keeps
		// failing is worth a warning.
		level := slog.LevelDebug
		if m.queue.NumRequeues(key) >= 5 {
			level = slog.LevelWarn
		}
		m.log.Log(context.Background(), level, "syncing pod; will retry", "pod", key, "err", err)
		m.queue.AddRateLimited(key)
		return true
	}
	m.queue.Forget(key)
	return true
}

// syncPod does for one Pod what a kubelet's pod workers and status manager
// do, minus the containers: report it running, or finish its deletion.
func (m *Manager) syncPod(key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we made; retrying cannot help
	}
	pod, err := m.pods.Pods(ns).Get(name)
	if err != nil {
		return nil // deleted; the delete handler released its IP
	}
	k := m.kubeletForNode(pod.Spec.NodeName)
	if k == nil {
		return nil // not one of the lab's nodes
	}
	ctx := k.runContext()
	if ctx == nil {
		return nil // a stopped node does nothing; start enqueues its Pods again
	}
	pods := m.cfg.Client.CoreV1().Pods(ns)

	if pod.DeletionTimestamp != nil {
		if m.handled(pod) {
			// A real container stops first (the CCM leaves its work).
			m.events.killing(pod)
			m.stopContainer(pod.UID, gracePeriod(pod))
		} else if m.runsContainers(pod) {
			m.events.killing(pod)
			m.stopPodContainers(pod.UID, gracePeriod(pod)) // containers.go
		}
		// There are no containers to stop, so termination is over at once.
		// Deleting with grace period 0 is how a kubelet tells the apiserver
		// so; the UID precondition keeps a same-named successor safe.
		err := pods.Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("finishing deletion: %w", err)
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return nil
	}

	node, err := m.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return nil // not in the cache yet; its add event enqueues the node's Pods
	}
	hostIP := kube.InternalIP(node)
	if hostIP == "" {
		hostIP = k.instance().PrivateIP
	}
	podIP, err := m.podIP(pod, node, key, hostIP)
	if errors.Is(err, errPodGone) || (err == nil && podIP == "") {
		return nil
	}
	if err != nil {
		return err
	}
	if m.runsContainers(pod) {
		return m.syncRunPod(ctx, pod, key, hostIP, podIP)
	}
	stopped := m.staticStopped(pod) // staticpods.go
	var ctr *container
	if m.handled(pod) {
		c := m.syncContainer(ctx, pod, key) // runtime.go
		ctr = &c
		if runtimeStatusIsCurrent(pod, hostIP, podIP, c) {
			return nil
		}
	} else if (!stopped && statusIsCurrent(pod, hostIP, podIP)) || (stopped && stoppedStatusIsCurrent(pod, hostIP)) {
		return nil
	}
	updated := pod.DeepCopy()
	now := metav1.NewTime(m.cfg.Clock.Now())
	setRunningStatus(updated, hostIP, podIP, now)
	if stopped {
		setStoppedStatus(updated, now)
	}
	if ctr != nil {
		setRuntimeStatus(updated, *ctr, now)
	}
	if _, err = pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return m.statusNotWritten(ctx, pod, err)
	}
	if pod.Status.StartTime == nil && !IsMirrorPod(pod) {
		m.events.containersStarted(pod) // events.go
	}
	if ctr != nil && !ctr.running && !inBackOff(pod, ctr.restarts) {
		m.events.backOff(pod)
	}
	return nil
}

// statusNotWritten is what a failed status write of pod means: nothing
// when the kubelet is stopping, the Pod's address released when the Pod
// is gone (deleted while it was synced), else an error to retry.
func (m *Manager) statusNotWritten(ctx context.Context, pod *v1.Pod, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case apierrors.IsNotFound(err):
		if !pod.Spec.HostNetwork {
			m.releasePodIP(pod)
		}
		return nil
	}
	return fmt.Errorf("updating status: %w", err)
}

// podIP returns the Pod's address: the host's for hostNetwork Pods, the one
// it already has (an IP never changes under a running Pod), or a new one
// from the node's podCIDR or the VPC. "" with no error means "not yet": the
// node has no podCIDR, and the Node update that brings one re-enqueues.
func (m *Manager) podIP(pod *v1.Pod, node *v1.Node, key, hostIP string) (string, error) {
	if pod.Spec.HostNetwork {
		return hostIP, nil
	}
	if pod.Status.PodIP != "" {
		m.adoptPodIP(pod)
		return pod.Status.PodIP, nil
	}
	prefix := m.vpcRange
	if m.vpcPool == nil {
		if node.Spec.PodCIDR == "" {
			return "", nil
		}
		p, err := netip.ParsePrefix(node.Spec.PodCIDR)
		if err != nil {
			return "", fmt.Errorf("node %s podCIDR %q: %w", node.Name, node.Spec.PodCIDR, err)
		}
		prefix = p
	}
	indexer := m.podInformer.GetIndexer()
	addr, err := m.pool(node.Name).allocate(prefix, pod.UID, func() bool {
		obj, ok, _ := indexer.GetByKey(key)
		p, isPod := obj.(*v1.Pod)
		return ok && isPod && p.UID == pod.UID
	})
	if err != nil {
		return "", err
	}
	m.assignVPCAddress(pod, addr) // eniaddrs.go
	return addr.String(), nil
}

// readinessGatesPassed: with readiness gates (the AWS Load Balancer
// Controller uses one in ip mode), Ready waits for their conditions.
func readinessGatesPassed(pod *v1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		c := findPodCondition(&pod.Status, g.ConditionType)
		if c == nil || c.Status != v1.ConditionTrue {
			return false
		}
	}
	return true
}

func statusIsCurrent(pod *v1.Pod, hostIP, podIP string) bool {
	st := &pod.Status
	if st.Phase != v1.PodRunning || st.PodIP != podIP || st.HostIP != hostIP || st.StartTime == nil {
		return false
	}
	want := v1.ConditionFalse
	if readinessGatesPassed(pod) {
		want = v1.ConditionTrue
	}
	for _, t := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady} {
		if c := findPodCondition(st, t); c == nil || c.Status != v1.ConditionTrue {
			return false
		}
	}
	if c := findPodCondition(st, v1.PodReady); c == nil || c.Status != want {
		return false
	}
	if len(st.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil {
			return false
		}
	}
	return true
}

// setRunningStatus writes what a kubelet reports once every container has
// started and passed its (imaginary) probes.
func setRunningStatus(pod *v1.Pod, hostIP, podIP string, now metav1.Time) {
	st := &pod.Status
	st.Phase = v1.PodRunning
	st.Reason, st.Message = "", ""
	st.HostIP, st.HostIPs = hostIP, []v1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []v1.PodIP{{IP: podIP}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.ObservedGeneration = pod.Generation
	ready, reason, message := v1.ConditionTrue, "", ""
	if !readinessGatesPassed(pod) {
		ready, reason, message = v1.ConditionFalse, "ReadinessGatesNotReady", "the pod's readiness gates are not all true"
	}
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodScheduled} {
		setPodCondition(st, t, v1.ConditionTrue, "", "", pod.Generation, now)
	}
	setPodCondition(st, v1.PodReady, ready, reason, message, pod.Generation, now)

	started := *st.StartTime
	st.InitContainerStatuses = make([]v1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, started)
		// A sidecar (restartPolicy Always) keeps running; a plain init
		// container has run to completion before the others started.
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			cs.Started = ptr.To(false)
			cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: cs.ContainerID,
			}}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	if len(st.InitContainerStatuses) == 0 {
		st.InitContainerStatuses = nil
	}
	st.ContainerStatuses = make([]v1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(pod, c, started))
	}
}

func containerStatus(pod *v1.Pod, c v1.Container, started metav1.Time) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name:    c.Name,
		Image:   c.Image,
		ImageID: imageID(c.Image),
		// Stable per Pod and container, so a resync rewrites nothing.
		ContainerID: "containerd://" + stableHex("container", string(pod.UID), c.Name),
		Ready:       true,
		Started:     ptr.To(true),
		State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
	}
}

// imageID looks like containerd's: the fully qualified repository and a
// digest (here derived from the reference, since nothing is pulled).
func imageID(image string) string {
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	first, _, hasSlash := strings.Cut(repo, "/")
	switch {
	case !hasSlash:
		repo = "docker.io/library/" + repo
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		repo = "docker.io/" + repo
	}
	return repo + "@sha256:" + stableHex("image", image)
}

func findPodCondition(st *v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func setPodCondition(st *v1.PodStatus, t v1.PodConditionType, status v1.ConditionStatus, reason, message string, gen int64, now metav1.Time) {
	c := findPodCondition(st, t)
	if c == nil {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: t})
		c = &st.Conditions[len(st.Conditions)-1]
	}
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, message, gen
}

// syncRunPod writes the status of a Pod whose containers the PodRuntime
// runs, after starting what should run now.
func (m *Manager) syncRunPod(ctx context.Context, pod *v1.Pod, key, hostIP, podIP string) error {
	first := pod.Status.StartTime == nil
	updated := m.syncPodContainers(ctx, pod, key, hostIP, podIP) // containers.go
	if apiequality.Semantic.DeepEqual(pod.Status, updated.Status) {
		return nil
	}
	if _, err := m.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return m.statusNotWritten(ctx, pod, err)
	}
	if first {
		m.events.containersStarted(pod) // events.go
	}
	m.events.backOffs(pod, updated)
	return nil
}
