package kubelet

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// The control-plane node. The lab launches one instance tagged
// ControlPlaneTag (kOps tags its control-plane instances so); its kubelet
// registers the Node as kubeadm leaves a control-plane node: labelled
// node-role.kubernetes.io/control-plane and
// node.kubernetes.io/exclude-from-external-load-balancers (so the Service
// controller leaves it out of load balancers), tainted
// node-role.kubernetes.io/control-plane:NoSchedule (so no user Pod lands
// there). Being an instance, it is initialized by the CCM like any node
// and gets a route like any node.
//
// Its kubelet keeps one mirror Pod per static Pod manifest
// (Config.StaticPods), as a real kubelet does for /etc/kubernetes/manifests:
// named <manifest name>-<node name>, annotated kubernetes.io/config.mirror
// with the manifest's hash, owned by the Node. A changed manifest (the CCM's
// --controllers after a switch) replaces the mirror Pod, as a real kubelet
// does when a manifest file changes.

const (
	// ControlPlaneTag marks the control-plane instance.
	ControlPlaneTag = "k8s.io/role/control-plane"

	LabelControlPlane      = "node-role.kubernetes.io/control-plane"
	LabelExcludeFromLB     = v1.LabelNodeExcludeBalancers
	annotationMirror       = v1.MirrorPodAnnotationKey
	annotationConfigHash   = "kubernetes.io/config.hash"
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigSeen   = "kubernetes.io/config.seen"
)

// StaticPod is one manifest of the control-plane node. Stopped says its
// container is not running (the CCM with no controller on): the mirror Pod
// then shows the container Completed and not Ready.
type StaticPod struct {
	Pod     *v1.Pod
	Stopped bool
}

// IsControlPlane reports whether inst is the control-plane instance.
func IsControlPlane(inst cloud.Instance) bool { return inst.Tags[ControlPlaneTag] != "" }

// IsMirrorPod reports whether pod is a static Pod's mirror.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[annotationMirror]
	return ok
}

// ControlPlaneTaint is kubeadm's taint on control-plane nodes.
func ControlPlaneTaint() v1.Taint {
	return v1.Taint{Key: LabelControlPlane, Effect: v1.TaintEffectNoSchedule}
}

// asControlPlane makes a new Node a control-plane node.
func asControlPlane(n *v1.Node) {
	n.Labels[LabelControlPlane] = ""
	n.Labels[LabelExcludeFromLB] = ""
	n.Spec.Taints = append(n.Spec.Taints, ControlPlaneTaint())
}

// StaticPodsChanged tells the control-plane kubelet to compare its mirror
// Pods with Config.StaticPods again.
func (m *Manager) StaticPodsChanged() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.byNode {
		if k.controlPlane {
			k.pokeStatic()
		}
	}
}

func (k *kubelet) pokeStatic() {
	select {
	case k.staticPoke <- struct{}{}:
	default:
	}
}

func manifestHash(p *v1.Pod) string {
	b, _ := json.Marshal(struct {
		L map[string]string
		S v1.PodSpec
	}{p.Labels, p.Spec})
	return stableHex("manifest", string(b))[:32]
}

// staticStopped reports whether pod mirrors a manifest whose container is
// not running.
func (m *Manager) staticStopped(pod *v1.Pod) bool {
	if m.cfg.StaticPods == nil || !IsMirrorPod(pod) {
		return false
	}
	for _, sp := range m.cfg.StaticPods() {
		if sp.Pod.Name+"-"+pod.Spec.NodeName == pod.Name {
			return sp.Stopped
		}
	}
	return false
}

// syncStaticPods creates, replaces and deletes this node's mirror Pods.
func (k *kubelet) syncStaticPods(ctx context.Context) error {
	m := k.m
	if !k.controlPlane || m.cfg.StaticPods == nil || k.nodeUID == "" {
		return nil
	}
	pods := m.cfg.Client.CoreV1().Pods(metav1.NamespaceSystem)
	want := map[string]bool{}
	var errs []error
	for _, sp := range m.cfg.StaticPods() {
		mirror := sp.Pod.DeepCopy()
		mirror.Name = sp.Pod.Name + "-" + k.name
		mirror.Namespace = metav1.NamespaceSystem
		mirror.Spec.NodeName = k.name
		hash := manifestHash(sp.Pod)
		if mirror.Annotations == nil {
			mirror.Annotations = map[string]string{}
		}
		mirror.Annotations[annotationConfigHash] = hash
		mirror.Annotations[annotationMirror] = hash
		mirror.Annotations[annotationConfigSource] = "file"
		mirror.Annotations[annotationConfigSeen] = k.now().UTC().Format("2006-01-02T15:04:05.000000000Z")
		mirror.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: k.name, UID: k.nodeUID, Controller: ptr.To(true),
		}}
		want[mirror.Name] = true
		cur, err := m.pods.Pods(metav1.NamespaceSystem).Get(mirror.Name)
		if err == nil && cur.Annotations[annotationMirror] == hash && cur.DeletionTimestamp == nil {
			continue
		}
		if err == nil {
			err := pods.Delete(ctx, cur.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(cur.UID)),
			})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
		}
		if _, err := pods.Create(ctx, mirror, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating mirror pod %s: %w", mirror.Name, err))
		}
	}
	objs, _ := m.podInformer.GetIndexer().ByIndex(nodeNameIndex, k.name)
	for _, obj := range objs {
		if p, ok := obj.(*v1.Pod); ok && IsMirrorPod(p) && !want[p.Name] && p.DeletionTimestamp == nil {
			err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// setStoppedStatus turns a running status into one whose container has
// exited cleanly, for a static Pod whose process runs nothing.
func setStoppedStatus(pod *v1.Pod, now metav1.Time) {
	st := &pod.Status
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		} else if cs.State.Terminated != nil {
			started, now = cs.State.Terminated.StartedAt, cs.State.Terminated.FinishedAt
		}
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID,
		}}
	}
	setPodCondition(st, v1.ContainersReady, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: ["+containerNames(pod)+"]", pod.Generation, now)
	setPodCondition(st, v1.PodReady, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: ["+containerNames(pod)+"]", pod.Generation, now)
}

func containerNames(pod *v1.Pod) string {
	s := ""
	for i, c := range pod.Spec.Containers {
		if i > 0 {
			s += " "
		}
		s += c.Name
	}
	return s
}

// stoppedStatusIsCurrent is statusIsCurrent for a stopped static Pod.
func stoppedStatusIsCurrent(pod *v1.Pod, hostIP string) bool {
	st := &pod.Status
	if st.Phase != v1.PodRunning || st.HostIP != hostIP || st.PodIP != hostIP {
		return false
	}
	if c := findPodCondition(st, v1.PodReady); c == nil || c.Status != v1.ConditionFalse {
		return false
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Terminated == nil {
			return false
		}
	}
	return len(st.ContainerStatuses) == len(pod.Spec.Containers)
}
