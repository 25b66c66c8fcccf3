package check

import (
	"context"
	"errors"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
)

// Checks of the lesson on the CCM DaemonSet's toleration of the
// uninitialized taint. On a cluster's first boot every node, the
// control-plane node included, registers with
// node.cloudprovider.kubernetes.io/uninitialized (the kubelet with
// --cloud-provider=external), and only the CCM removes it. A CCM Pod that
// does not tolerate it is never scheduled (the DaemonSet controller's
// nodeShouldRunDaemonPod, kubernetes v1.37.2 pkg/controller/daemon), so
// nothing ever removes the taint: the deadlock the toleration prevents.

// LabelControlPlane marks the control-plane node.
const LabelControlPlane = "node-role.kubernetes.io/control-plane"

// CCMDaemonSet finds the CCM's DaemonSet in kube-system (named
// <provider>-cloud-controller-manager).
func CCMDaemonSet(ctx context.Context, c kubernetes.Interface) (*appsv1.DaemonSet, error) {
	l, err := c.AppsV1().DaemonSets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		if strings.HasSuffix(l.Items[i].Name, "-cloud-controller-manager") {
			return &l.Items[i], nil
		}
	}
	return nil, errors.New("kube-system has no CCM DaemonSet (*-cloud-controller-manager)")
}

// ToleratesUninitialized reports whether the Pod spec tolerates the
// uninitialized taint.
func ToleratesUninitialized(spec *corev1.PodSpec) bool {
	t := kube.UninitializedTaint()
	// The rules of Toleration.ToleratesTaint for an Equal or Exists
	// toleration of this key (an empty key with Exists tolerates all).
	return slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
		if tol.Effect != "" && tol.Effect != t.Effect {
			return false
		}
		if tol.Key == "" {
			return tol.Operator == corev1.TolerationOpExists
		}
		if tol.Key != t.Key {
			return false
		}
		return tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value
	})
}

// ccmpodKinds is this file's part of the kinds table (checks_extra.go).
func ccmpodKinds() map[string]checkKind {
	return map[string]checkKind{
		"ccmDaemonSet": {params: []string{"!state"}, enum: map[string][]string{"state": {"stranded", "running"}}, eval: evalCCMDaemonSet},
	}
}

// ccmpodAnswerKinds is this file's part of the answer kinds.
func ccmpodAnswerKinds() map[string]answerKind {
	return map[string]answerKind{
		"controlPlaneNode": {values: answerControlPlaneNode},
	}
}

func (e *evalCtx) controlPlaneNodes(ctx context.Context) ([]corev1.Node, error) {
	l, err := e.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelControlPlane})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func evalCCMDaemonSet(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	ds, err := CCMDaemonSet(ctx, e.env.Client)
	if err != nil {
		return failf("CCM の DaemonSet が見つかりません: %v", "no CCM DaemonSet: %v", err)
	}
	cps, err := e.controlPlaneNodes(ctx)
	if err != nil || len(cps) == 0 {
		return failf("control-plane の Node がありません。", "there is no control-plane Node.")
	}
	cp := cps[0]
	tolerates := ToleratesUninitialized(&ds.Spec.Template.Spec)
	tainted := kube.HasUninitializedTaint(&cp)
	settled := ds.Status.ObservedGeneration == ds.Generation
	desired := ds.Status.DesiredNumberScheduled
	if c.State == "stranded" {
		switch {
		case tolerates:
			return failf("DaemonSet %s はまだ %s を許容しています (spec.template.spec.tolerations)。", "DaemonSet %s still tolerates %s (spec.template.spec.tolerations).", ds.Name, kube.UninitializedTaint().Key)
		case !tainted:
			return failf("control-plane の Node %s に %s がありません。", "the control-plane Node %s has no %s.", cp.Name, kube.UninitializedTaint().Key)
		case !settled || desired != 0:
			return failf("DaemonSet %s はまだ Pod を %d 個望んでいます (DESIRED)。control-plane の Node では、その Pod がまだ動いています。", "DaemonSet %s still wants %d Pod(s) (DESIRED); its Pod still runs on the control-plane Node.", ds.Name, desired)
		}
		return passf("DaemonSet %s は Pod を 1 つも望まず (DESIRED 0)、control-plane の Node %s の taint を外す CCM はいません", "DaemonSet %s wants no Pod (DESIRED 0), and no CCM is left to remove the taint of the control-plane Node %s", ds.Name, cp.Name)
	}
	switch {
	case !tolerates:
		o := failf("DaemonSet %s は %s を許容していません。toleration を戻してください。", "DaemonSet %s does not tolerate %s: put the toleration back.", ds.Name, kube.UninitializedTaint().Key)
		if tainted && ds.Status.NumberReady == 0 {
			o = wayOut(o, strandedSwitch(ds.Name))
		}
		return o
	case !settled || ds.Status.NumberReady < 1:
		return failf("DaemonSet %s の CCM の Pod はまだ動いていません (READY %d)。", "DaemonSet %s's CCM Pod is not running yet (READY %d).", ds.Name, ds.Status.NumberReady)
	case tainted:
		return failf("CCM の Pod は動いていますが、control-plane の Node %s の taint はまだ外れていません。", "the CCM Pod runs, but the control-plane Node %s has not lost its taint yet.", cp.Name)
	}
	return passf("DaemonSet %s の CCM の Pod が動き、control-plane の Node %s は初期化されました", "DaemonSet %s's CCM Pod runs and the control-plane Node %s is initialized", ds.Name, cp.Name)
}

func answerControlPlaneNode(ctx context.Context, e *evalCtx, _ format.AnswerSpec) ([]string, Outcome) {
	cps, err := e.controlPlaneNodes(ctx)
	if err != nil || len(cps) == 0 {
		return nil, failf("control-plane の Node がありません。", "there is no control-plane Node.")
	}
	var out []string
	for _, n := range cps {
		out = append(out, n.Name)
	}
	return out, Outcome{}
}
