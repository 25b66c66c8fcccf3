package check

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Checks of the cluster side: Nodes and their initialization, Pods, and
// the node lifecycle that follows instances in the cloud.

// ---- nodes ----

func evalNewNodes(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	min := cmp.Or(c.Min, 1)
	nodes, o, ok := e.selectNodes(ctx, "new")
	if !ok {
		return o
	}
	if len(nodes) < min {
		return failf("新しい Node は %d 個です (%d 個必要)。", "%d new Node(s), %d needed.", len(nodes), min)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return passf("新しい Node: %s", "new Node(s): %s", strings.Join(names, ", "))
}

func (e *evalCtx) providerIDProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	want := e.env.Profile.ProviderID(profile.Machine{Zone: inst.Zone, InstanceID: inst.ID, NodeName: inst.PrivateDNSName})
	if n.Spec.ProviderID != want {
		if n.Spec.ProviderID == "" {
			return fmt.Sprintf("spec.providerID が空です (%s になるはず)", want), fmt.Sprintf("spec.providerID is empty (should become %s)", want)
		}
		return fmt.Sprintf("spec.providerID は %s (期待値 %s)", n.Spec.ProviderID, want), fmt.Sprintf("spec.providerID is %s, expected %s", n.Spec.ProviderID, want)
	}
	return "", ""
}

func (e *evalCtx) addressProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	if ip := kube.InternalIP(n); ip != inst.PrivateIP {
		if ip == "" {
			return "status.addresses に InternalIP がありません", "status.addresses has no InternalIP"
		}
		return fmt.Sprintf("InternalIP が %s (VM は %s)", ip, inst.PrivateIP), fmt.Sprintf("InternalIP is %s but the VM has %s", ip, inst.PrivateIP)
	}
	return "", ""
}

func (e *evalCtx) labelProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	want := map[string]string{
		flow.LabelZone:         inst.Zone,
		flow.LabelRegion:       e.env.Cloud.Config().Region,
		flow.LabelInstanceType: inst.InstanceType,
	}
	for _, k := range []string{flow.LabelRegion, flow.LabelZone, flow.LabelInstanceType} {
		if got := n.Labels[k]; got != want[k] {
			return fmt.Sprintf("label %s が %q (期待値 %q)", k, got, want[k]), fmt.Sprintf("label %s is %q, expected %q", k, got, want[k])
		}
	}
	return "", ""
}

func evalNodesInitialized(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	untainted := false // a Node lost the taint with nothing written: a dead end
	o := e.forEachNode(ctx, c.Nodes, "providerID、アドレス、ラベルが書かれ、taint が外れています", "providerID, addresses and labels written, taint removed",
		func(n *corev1.Node) (string, string) {
			for _, f := range []func(*corev1.Node) (string, string){e.providerIDProblem, e.addressProblem, e.labelProblem} {
				if ja, en := f(n); en != "" {
					untainted = n.Spec.ProviderID == "" && !kube.HasUninitializedTaint(n)
					if untainted {
						return ja + "。uninitialized taint はもうありません", en + ", and the uninitialized taint is already gone"
					}
					return ja, en
				}
			}
			if kube.HasUninitializedTaint(n) {
				return "uninitialized taint がまだ付いています", "still has the uninitialized taint"
			}
			return "", ""
		})
	if untainted {
		return wayOut(o, untaintedByHand())
	}
	return o
}

func evalNodeProviderID(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "providerID が VM を指しています", "providerID names the VM", e.providerIDProblem)
}

func evalNodeAddresses(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "InternalIP が VM のプライベート IP です", "InternalIP is the VM's private IP", e.addressProblem)
}

func evalNodeLabels(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "region/zone/instance-type のラベルがあります", "region, zone and instance-type labels are set", e.labelProblem)
}

func evalNodeTainted(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "uninitialized taint が残っています", "the uninitialized taint is still there",
		func(n *corev1.Node) (string, string) {
			if !kube.HasUninitializedTaint(n) {
				return "uninitialized taint がありません", "has no uninitialized taint"
			}
			return "", ""
		})
}

func evalNodesReady(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "Ready です", "Ready",
		func(n *corev1.Node) (string, string) {
			if !kube.NodeReady(n) {
				return "Ready ではありません", "is not Ready"
			}
			return "", ""
		})
}

// ---- pods ----

func (e *evalCtx) pods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	l, err := e.env.Client.CoreV1().Pods(format.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func schedulingMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

func evalPodsPending(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	pods, err := e.pods(ctx, c.Selector)
	if err != nil {
		return errOutcome(err)
	}
	if len(pods) == 0 {
		return failf("%s の Pod がありません。", "no Pods match %s.", c.Selector)
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			return failf("Pod %s は %s (node %q) で、Pending で待っていません。", "Pod %s is %s on node %q, not Pending.", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		msg := schedulingMessage(&p)
		if c.Reason != "" && !strings.Contains(strings.ToLower(msg), strings.ToLower(c.Reason)) {
			return failf("Pod %s は Pending ですが、スケジューラーの理由 %q に %q が含まれません。", "Pod %s is Pending, but the scheduler's reason %q does not mention %q.", p.Name, msg, c.Reason)
		}
	}
	return passf("%d 個の Pod が Pending です (スケジューラーの理由: 「%s」)", "%d Pod(s) Pending (the scheduler says: %q)", len(pods), schedulingMessage(&pods[0]))
}

func evalPodsRunning(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	min := cmp.Or(c.Min, 1)
	pods, err := e.pods(ctx, c.Selector)
	if err != nil {
		return errOutcome(err)
	}
	running := 0
	for _, p := range pods {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if p.Status.Phase != corev1.PodRunning || !ready {
			return failf("Pod %s はまだ %s です。", "Pod %s is still %s.", p.Name, p.Status.Phase)
		}
		running++
	}
	if running < min {
		return failf("Running の Pod は %d 個です (%d 個必要)。", "%d Pod(s) Running, %d needed.", running, min)
	}
	return passf("%d 個の Pod が Running", "%d Pod(s) Running", running)
}

// ---- instances and node lifecycle ----

// terminatedSince lists instances terminated after the exercise started
// (and, for scope "new", also launched after it).
func (e *evalCtx) terminatedSince(scope string) []cloud.Instance {
	var out []cloud.Instance
	for _, inst := range e.env.Cloud.Snapshot().Instances {
		if inst.State != cloud.InstanceTerminated || !inst.StateTransitionTime.After(e.start) {
			continue
		}
		if scope == "new" && !e.isNew(inst) {
			continue
		}
		out = append(out, inst)
	}
	return out
}

func noTerminated(scope string) Outcome {
	if scope == "new" {
		return failf("演習中に起動した VM はまだ終了 (terminate) されていません。", "no VM launched during the exercise has been terminated yet.")
	}
	return failf("演習を始めてから終了 (terminate) された VM はまだありません。", "no VM has been terminated since the exercise started.")
}

func evalInstanceTerminated(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	insts := e.terminatedSince(c.Nodes)
	if len(insts) == 0 {
		return noTerminated(c.Nodes)
	}
	return passf("VM %s (%s) は terminated です", "VM %s (%s) is terminated", insts[0].ID, insts[0].PrivateDNSName)
}

func evalNodeNotReady(ctx context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	insts := e.terminatedSince("all")
	if len(insts) == 0 {
		return noTerminated("all")
	}
	for _, inst := range insts {
		n, err := e.env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return errOutcome(err)
		}
		if !kube.NodeReady(n) {
			return passf("VM %s は消えましたが、Node %s は NotReady のまま残っています", "VM %s is gone, and Node %s is left behind, NotReady", inst.ID, n.Name)
		}
		return failf("Node %s はまだ Ready です。kubelet の応答が止まってから約 10 秒待ってください。", "Node %s is still Ready: wait about 10 s after its kubelet stopped.", n.Name)
	}
	for _, inst := range insts {
		if ok, _ := e.deletedByNodeLifecycle(ctx, inst.PrivateDNSName); !ok {
			return wayOut(failf("終了した VM の Node %s はもう削除されていますが、node-lifecycle controller の DeletingNode イベントがありません (kubectl delete node で消した Node です)。",
				"the terminated VM's Node %s is already deleted, with no DeletingNode event from the node-lifecycle controller (a Node deleted with kubectl delete node).", inst.PrivateDNSName), kubectlDeletedNode())
		}
	}
	return failf("終了した VM の Node はもう削除されています。node-lifecycle controller をオフにしてからやり直してください。", "the terminated VM's Node is already deleted: switch the node-lifecycle controller off first, then try again.")
}

// The node-lifecycle controller (k8s.io/cloud-provider
// controllers/nodelifecycle) records a Normal DeletingNode Event on the
// Node, with its UID, right before it deletes a Node whose instance the
// cloud no longer has; kubectl delete node records none.
const (
	reasonDeletingNode      = "DeletingNode"
	sourceNodeLifecycleCtrl = "cloud-node-lifecycle-controller"
)

func evalNodeDeleted(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	insts := e.terminatedSince(c.Nodes)
	if len(insts) == 0 {
		return noTerminated(c.Nodes)
	}
	var names []string
	for _, inst := range insts {
		_, err := e.env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if err == nil {
			return failf("終了した VM の Node %s がまだ残っています。", "Node %s of a terminated VM is still there.", inst.PrivateDNSName)
		}
		if !apierrors.IsNotFound(err) {
			return errOutcome(err)
		}
		ok, o := e.deletedByNodeLifecycle(ctx, inst.PrivateDNSName)
		if !ok {
			return o
		}
		names = append(names, inst.PrivateDNSName)
	}
	return passf("終了した VM の Node は node-lifecycle controller が削除しました (DeletingNode イベント): %s",
		"the node-lifecycle controller deleted the Nodes of terminated VMs (DeletingNode event): %s", strings.Join(names, ", "))
}

// deletedByNodeLifecycle looks for the node-lifecycle controller's
// DeletingNode Event on the Node that was deleted: on its UID when the
// history recorded the deletion, else on its name since the exercise
// started.
func (e *evalCtx) deletedByNodeLifecycle(ctx context.Context, name string) (bool, Outcome) {
	uids := map[string]bool{}
	entries, _ := e.sinceStart()
	for _, en := range entries {
		if o := en.Object; en.Kind == history.KindObject && o.Resource == "nodes" && o.Name == name && o.Verb == history.VerbDeleted {
			uids[o.UID] = true
		}
	}
	l, err := e.env.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Node"),
			fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("reason", reasonDeletingNode),
		).String(),
	})
	if err != nil {
		return false, errOutcome(err)
	}
	for _, ev := range l.Items {
		// The field selector again: a client may not apply it.
		if ev.Source.Component != sourceNodeLifecycleCtrl || ev.Reason != reasonDeletingNode || ev.InvolvedObject.Kind != "Node" || ev.InvolvedObject.Name != name {
			continue
		}
		if len(uids) > 0 && uids[string(ev.InvolvedObject.UID)] {
			return true, Outcome{}
		}
		if len(uids) == 0 && !eventTime(&ev).Before(e.start) {
			return true, Outcome{}
		}
	}
	return false, wayOut(failf("Node %s は消えましたが、node-lifecycle controller の DeletingNode イベントがありません。kubectl delete node で消した Node は、controller が消したことになりません。",
		"Node %s is gone, but there is no DeletingNode event from the node-lifecycle controller: a Node deleted with kubectl delete node was not deleted by the controller.", name), kubectlDeletedNode())
}

// eventTime is when an Event last happened, whichever fields its recorder
// set.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
