package kubelet

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// A real kubelet reports a Pod's start as events on its containers
// (Pulling, Pulled, Created, Started), with source kubelet and the node as
// host; `kubectl describe pod` lists them after the scheduler's
// Scheduled. The lab pulls nothing, so the pull takes a made-up but stable
// time and size. The messages are v1.37's (pkg/kubelet/images,
// pkg/kubelet/kuberuntime).

type eventSink struct {
	client      kubernetes.Interface
	broadcaster record.EventBroadcaster
	mu          sync.Mutex
	recorders   map[string]record.EventRecorder // by node
}

func newEventSink(c kubernetes.Interface) *eventSink {
	return &eventSink{client: c, recorders: map[string]record.EventRecorder{}}
}

func (e *eventSink) start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.broadcaster = record.NewBroadcaster()
	e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.client.CoreV1().Events("")})
}

func (e *eventSink) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster != nil {
		e.broadcaster.Shutdown()
		e.broadcaster = nil
	}
	clear(e.recorders)
}

func (e *eventSink) recorder(node string) record.EventRecorder {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster == nil {
		return nil
	}
	r := e.recorders[node]
	if r == nil {
		if len(e.recorders) > 4096 {
			clear(e.recorders)
		}
		r = e.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: node})
		e.recorders[node] = r
	}
	return r
}

// containersStarted records the start of pod's containers.
func (e *eventSink) containersStarted(pod *v1.Pod) {
	r := e.recorder(pod.Spec.NodeName)
	if r == nil {
		return
	}
	for _, c := range pod.Spec.Containers {
		ref := &v1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, FieldPath: fmt.Sprintf("spec.containers{%s}", c.Name),
		}
		h := stableHex("pull", c.Image)
		ms, _ := strconv.ParseUint(h[:4], 16, 32)
		size, _ := strconv.ParseUint(h[4:10], 16, 32)
		pull := time.Duration(400+ms%2600) * time.Millisecond
		r.Event(ref, v1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
		r.Event(ref, v1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
			c.Image, pull, pull, 20_000_000+size*4))
		r.Event(ref, v1.EventTypeNormal, "Created", "Container created")
		r.Event(ref, v1.EventTypeNormal, "Started", "Container started")
	}
}

func containerRef(pod *v1.Pod, c string) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: fmt.Sprintf("spec.containers{%s}", c),
	}
}

// backOff records what a kubelet records when a container that exited
// waits to be restarted (v1.37's message).
func (e *eventSink) backOff(pod *v1.Pod) {
	if r := e.recorder(pod.Spec.NodeName); r != nil {
		c := pod.Spec.Containers[0].Name
		r.Eventf(containerRef(pod, c), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", c, pod.Name, pod.Namespace, pod.UID)
	}
}

// killing records the stop of a deleted Pod's running container.
func (e *eventSink) killing(pod *v1.Pod) {
	if r := e.recorder(pod.Spec.NodeName); r != nil {
		for _, c := range pod.Spec.Containers {
			r.Event(containerRef(pod, c.Name), v1.EventTypeNormal, "Killing", fmt.Sprintf("Stopping container %s", c.Name))
		}
	}
}

// restarting records a container's restart: the image is on the node
// already (pkg/kubelet/images, v1.37's message), then Created and Started.
func (e *eventSink) restarting(pod *v1.Pod, c, image string) {
	if r := e.recorder(pod.Spec.NodeName); r != nil {
		ref := containerRef(pod, c)
		r.Event(ref, v1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", image))
		r.Event(ref, v1.EventTypeNormal, "Created", "Container created")
		r.Event(ref, v1.EventTypeNormal, "Started", "Container started")
	}
}

// backOffs records BackOff for each container that went into back-off
// with this status (pkg/kubelet/kuberuntime, v1.37's message).
func (e *eventSink) backOffs(old, updated *v1.Pod) {
	r := e.recorder(old.Spec.NodeName)
	if r == nil {
		return
	}
	was := map[string]int32{}
	for _, s := range append(slices.Clone(old.Status.InitContainerStatuses), old.Status.ContainerStatuses...) {
		if s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" {
			was[s.Name] = s.RestartCount + 1
		}
	}
	for _, s := range append(slices.Clone(updated.Status.InitContainerStatuses), updated.Status.ContainerStatuses...) {
		if s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff" || was[s.Name] == s.RestartCount+1 {
			continue
		}
		r.Eventf(containerRef(old, s.Name), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", s.Name, old.Name, old.Namespace, old.UID)
	}
}
