package check

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Evidence kinds: they read the lab's history (lab/history) after
// Input.Since, the moment the previous step passed, so they pass only on
// something that happened while the step was current, and they can say
// who did it. Docs: docs/exercises.md.

// ManagerKubelet is the simulated kubelets' field manager.
const ManagerKubelet = "kubelet"

// Who did it, for the "by" parameter.
const (
	ByCCM     = "ccm"     // the CCM's controllers (ccmnames.IsCCM)
	ByKubelet = "kubelet" // a kubelet
	ByKubectl = "kubectl" // kubectl (kubectl-create, kubectl-taint, ...)
	ByNotCCM  = "notccm"  // anyone but the CCM, including no nameable writer
)

// Changes objectChange knows.
const (
	ChangeCreated            = "created"
	ChangeDeleted            = "deleted"
	ChangeUpdated            = "updated"
	ChangeTaintRemoved       = "taintRemoved"       // nodes: the uninitialized taint went
	ChangeShutdownTaintAdded = "shutdownTaintAdded" // nodes: node.cloudprovider.kubernetes.io/shutdown appeared
	ChangeProviderIDSet      = "providerIDSet"      // nodes
	ChangeIngressSet         = "ingressSet"         // services: status.loadBalancer.ingress filled
	ChangeIngressCleared     = "ingressCleared"     // services
	ChangeFinalizerRemoved   = "finalizerRemoved"   // services: the load-balancer-cleanup finalizer went
	ChangeDeletionStarted    = "deletionStarted"    // deletionTimestamp set
	ChangePolicyLocal        = "policyLocal"        // services: externalTrafficPolicy became Local
	ChangeRunning            = "running"            // pods: became Running
)

// TaintShutdown is the taint the node-lifecycle controller puts on a Node
// whose VM is stopped.
const TaintShutdown = "node.cloudprovider.kubernetes.io/shutdown"

func changes() []string {
	return []string{ChangeCreated, ChangeDeleted, ChangeUpdated, ChangeTaintRemoved, ChangeShutdownTaintAdded, ChangeProviderIDSet,
		ChangeIngressSet, ChangeIngressCleared, ChangeFinalizerRemoved, ChangeDeletionStarted, ChangePolicyLocal, ChangeRunning}
}

func evidenceKinds() map[string]checkKind {
	by := []string{ByCCM, ByKubelet, ByKubectl, ByNotCCM}
	sw := format.Switches()
	return map[string]checkKind{
		"objectChange": {params: []string{"!resource", "!change", "name", "nodes", "by", "whileOff"},
			enum: map[string][]string{"resource": {"nodes", "services", "pods"}, "change": changes(), "nodes": {"all", "new"}, "by": by, "whileOff": sw},
			eval: evalObjectChange},
		"eventSeen": {params: []string{"!reasons", "name", "message", "whileOff"},
			enum: map[string][]string{"whileOff": sw}, eval: evalEventSeen},
		"unwatched": {params: []string{"!name", "!whileOff"},
			enum: map[string][]string{"whileOff": sw}, eval: evalUnwatched},
		"switched": {params: []string{"!controller", "!enabled"},
			enum: map[string][]string{"controller": sw}, eval: evalSwitched},
		"cloudCall": {params: []string{"!action", "caller", "result", "code", "min", "whileOff"},
			enum: map[string][]string{"result": {"ok", "error"}, "whileOff": sw}, eval: evalCloudCall},
		"denyChanged": {params: []string{"!action", "!denied"}, eval: evalDenyChanged},
		"request": {params: []string{"!name", "via", "result", "extraHop", "sourceKept", "policy", "min", "whileOff"},
			enum: map[string][]string{"via": {dataplane.KindClusterIP, dataplane.KindNodePort, dataplane.KindLoadBalancer},
				"result": {"ok", "error"}, "policy": {dataplane.PolicyCluster, dataplane.PolicyLocal}, "whileOff": sw},
			eval: evalRequest},
	}
}

// truncated is the verdict when the ring dropped what the step needs.
func (e *evalCtx) truncated() Outcome {
	return failf("ラボの履歴があふれて、このステップの証拠が残っていません。演習をリセットしてやり直してください。",
		"the lab's history overflowed and this step's evidence is gone: reset the exercise and start again.")
}

// byMatches says whether the writers fit the "by" parameter.
func byMatches(by string, managers []string) bool {
	switch by {
	case "":
		return true
	case ByCCM:
		return slices.ContainsFunc(managers, ccmnames.IsCCM)
	case ByKubelet:
		return slices.Contains(managers, ManagerKubelet)
	case ByKubectl:
		return slices.ContainsFunc(managers, func(m string) bool { return strings.HasPrefix(m, "kubectl") })
	case ByNotCCM:
		return !slices.ContainsFunc(managers, ccmnames.IsCCM)
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	if n == nil {
		return false
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// changeMatches says whether one recorded change is the asked one.
func changeMatches(change string, o *history.ObjectChange) bool {
	switch change {
	case ChangeCreated:
		return o.Verb == history.VerbCreated
	case ChangeDeleted:
		return o.Verb == history.VerbDeleted
	case ChangeUpdated:
		return o.Verb == history.VerbUpdated
	}
	if o.Verb != history.VerbUpdated {
		return false
	}
	switch on, nn := asNode(o.Old), asNode(o.New); {
	case on != nil && nn != nil:
		switch change {
		case ChangeTaintRemoved:
			return kube.HasUninitializedTaint(on) && !kube.HasUninitializedTaint(nn)
		case ChangeShutdownTaintAdded:
			return !hasTaint(on, TaintShutdown) && hasTaint(nn, TaintShutdown)
		case ChangeProviderIDSet:
			return on.Spec.ProviderID == "" && nn.Spec.ProviderID != ""
		case ChangeDeletionStarted:
			return on.DeletionTimestamp == nil && nn.DeletionTimestamp != nil
		}
		return false
	}
	if os, ns := asService(o.Old), asService(o.New); os != nil && ns != nil {
		switch change {
		case ChangeIngressSet:
			return ingressOf(os) == "" && ingressOf(ns) != ""
		case ChangeIngressCleared:
			return ingressOf(os) != "" && ingressOf(ns) == ""
		case ChangeFinalizerRemoved:
			return slices.Contains(os.Finalizers, flow.FinalizerLBCleanup) && !slices.Contains(ns.Finalizers, flow.FinalizerLBCleanup)
		case ChangeDeletionStarted:
			return os.DeletionTimestamp == nil && ns.DeletionTimestamp != nil
		case ChangePolicyLocal:
			return os.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal && ns.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
		}
		return false
	}
	if op, np := asPod(o.Old), asPod(o.New); op != nil && np != nil {
		switch change {
		case ChangeRunning:
			return op.Status.Phase != corev1.PodRunning && np.Status.Phase == corev1.PodRunning
		case ChangeDeletionStarted:
			return op.DeletionTimestamp == nil && np.DeletionTimestamp != nil
		}
	}
	return false
}

func asNode(o any) *corev1.Node       { n, _ := o.(*corev1.Node); return n }
func asService(o any) *corev1.Service { s, _ := o.(*corev1.Service); return s }
func asPod(o any) *corev1.Pod         { p, _ := o.(*corev1.Pod); return p }

// newNode says whether a Node's VM was launched after the exercise started.
func (e *evalCtx) newNode(name string) bool {
	inst, ok := e.env.Cloud.LookupInstance(name)
	return ok && e.isNew(inst)
}

func evalObjectChange(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	var wrongWho []i18n.Text // what happened, by the wrong writer
	untainted := false       // the uninitialized taint went by hand: a dead end
	for _, en := range e.hist {
		o := en.Object
		if en.Kind != history.KindObject || o.Resource != c.Resource || (c.Name != "" && o.Name != c.Name) {
			continue
		}
		if c.Resource == "services" || c.Resource == "pods" {
			if o.Namespace != format.Namespace {
				continue
			}
		}
		if c.Nodes == "new" && !e.newNode(o.Name) {
			continue
		}
		if c.WhileOff != "" && !en.WasOff(c.WhileOff) {
			continue
		}
		if !changeMatches(c.Change, o) {
			continue
		}
		if !byMatches(c.By, o.Managers) {
			wrongWho = append(wrongWho, join2("%s (書いたのは %s)", "%s, written by %s", changeDone(c.Resource, o.Name, c.Change), whoWrote(o.Managers)))
			untainted = untainted || c.Change == ChangeTaintRemoved && !slices.ContainsFunc(o.Managers, ccmnames.IsCCM)
			continue
		}
		return Outcome{true, join2("%s (書いたのは %s)", "%s, written by %s", changeDone(c.Resource, o.Name, c.Change), whoWrote(o.Managers))}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	if len(wrongWho) > 0 {
		more := i18n.Text{}
		if n := len(wrongWho) - 1; n > 0 {
			more = i18n.Textf(" (ほかに %d 件)", " (and %d more)", n)
		}
		want := expectedWriter(c.By)
		o := Outcome{false, i18n.Text{
			JA: fmt.Sprintf("%s%s。このステップが求める書き手は %s です。", wrongWho[0].JA, more.JA, want.JA),
			EN: fmt.Sprintf("%s%s; this step wants it done by %s.", wrongWho[0].EN, more.EN, want.EN),
		}}
		if untainted {
			o = wayOut(o, untaintedByHand())
		}
		return o
	}
	if c.WhileOff != "" {
		return Outcome{false, join2("前のステップが通ってから、%[2]s controller がオフの間には、%[1]s。", "Since the previous step passed, %[1]s while the %[2]s controller was off.",
			changeNotYet(c.Resource, c.Name, c.Nodes, c.Change), i18n.Text{JA: c.WhileOff, EN: c.WhileOff})}
	}
	return Outcome{false, join2("前のステップが通ってから、%s%s。", "Since the previous step passed, %s%s yet.", changeNotYet(c.Resource, c.Name, c.Nodes, c.Change), i18n.Text{})}
}

func evalEventSeen(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	seen := map[string]uint64{}
	for _, en := range e.hist {
		if en.Kind != history.KindObject || en.Object.Resource != "events" || en.Object.New == nil {
			continue
		}
		ev, ok := en.Object.New.(*corev1.Event)
		if !ok || (c.Name != "" && ev.InvolvedObject.Name != c.Name) {
			continue
		}
		if c.Message != "" && !strings.Contains(ev.Message, c.Message) {
			continue
		}
		if c.WhileOff != "" && !en.WasOff(c.WhileOff) {
			continue
		}
		if _, ok := seen[ev.Reason]; !ok {
			seen[ev.Reason] = en.Seq
		}
	}
	for _, r := range c.Reasons {
		if _, ok := seen[r]; !ok {
			if e.histErr != nil {
				return e.truncated()
			}
			of := i18n.Text{}
			if c.Name != "" {
				of = i18n.Textf("%s の", " for %s", c.Name)
			}
			if c.Message != "" {
				return Outcome{false, join2("前のステップが通ってから、%[1]s「%[3]s」を含むイベント %[4]s はまだ記録されていません。", "Since the previous step passed, no %[4]s event%[1]s mentioning %[3]q has been recorded.", of, i18n.Text{}, c.Message, r)}
			}
			return Outcome{false, join2("前のステップが通ってから、%[1]sイベント %[3]s はまだ記録されていません。", "Since the previous step passed, no %[3]s event%[1]s has been recorded.", of, i18n.Text{}, r)}
		}
	}
	return passf("記録されたイベント: %s", "events recorded: %s", strings.Join(c.Reasons, ", "))
}

func onOff(b bool) (string, string) {
	if b {
		return "オン", "on"
	}
	return "オフ", "off"
}

func evalSwitched(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	want := *c.Enabled
	wantJA, wantEN := onOff(want)
	if on, ok := e.env.Controllers.Status()[c.Controller]; !ok {
		return failf("このラボには %s controller がありません。", "this lab has no %s controller.", c.Controller)
	} else if on != want {
		return Outcome{false, i18nf("%s controller を%sにしてください。", "switch the %s controller %s.", c.Controller, wantJA, wantEN)}
	}
	for _, en := range e.hist {
		if en.Kind == history.KindSwitch && en.Switch.Controller == c.Controller && en.Switch.On == want {
			return Outcome{true, i18nf("%s controller を%sにしました", "the %s controller was switched %s", c.Controller, wantJA, wantEN)}
		}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	return Outcome{false, i18nf("%s controller は%sですが、前のステップの後に切り替えられていません。", "the %s controller is %s, but it was not switched since the previous step.", c.Controller, wantJA, wantEN)}
}

func evalCloudCall(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	n, min := 0, cmp.Or(c.Min, 1)
	// "RegisterTargets|RegisterInstancesWithLoadBalancer": any of them, for
	// a step the lab's provider and the upstream AWS provider (ELB, ELBv2)
	// do with differently named calls.
	// "*" is any action: which call a throttle hits first is the
	// provider's business (the lab's asks DescribeLoadBalancers first,
	// cloud-provider-aws DescribeInstances and DescribeSubnets).
	actions := strings.Split(c.Action, "|")
	codes := strings.Split(c.Code, "|")
	var last i18n.Text
	for _, en := range e.hist {
		if en.Kind != history.KindCall || c.Action != "*" && !slices.Contains(actions, en.Call.Action) {
			continue
		}
		call := en.Call
		if c.Caller != "" && call.Caller != c.Caller {
			continue
		}
		if c.Result == "ok" && call.Error != "" || c.Result == "error" && call.Error == "" {
			continue
		}
		if c.Code != "" && !slices.Contains(codes, call.ErrorCode) {
			continue
		}
		if c.WhileOff != "" && !en.WasOff(c.WhileOff) {
			continue
		}
		n++
		last = i18n.Textf("#%[1]d、%[3]s の %[2]s、結果 %[4]s", "#%[1]d, %[2]s by %[3]s, %[4]s", call.Seq, call.Action, cmp.Or(call.Caller, "?"), cmp.Or(call.ErrorCode, "ok"))
	}
	if n >= min {
		return Outcome{true, join2("クラウド API の呼び出しログに %[1]sが %[3]d 回あります (最後は %[2]s)", "the call log has %[3]d %[1]s (the last: %[2]s)", callsWanted(c.Action, c.Caller, c.Result, c.Code, n), last, n)}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	if n == 0 {
		o := Outcome{false, join2("前のステップが通ってから、%sはまだクラウド API の呼び出しログにありません (%[3]d 回必要です)。", "Since the previous step passed, the call log has no %[1]s yet (%[3]d needed).", callsWanted(c.Action, c.Caller, c.Result, c.Code, 2), i18n.Text{}, min)}
		if t, ok := e.otherCaller(c); ok {
			o = wayOut(o, t)
		}
		return o
	}
	return Outcome{false, join2("前のステップが通ってから、クラウド API の呼び出しログにある%sは %[3]d 回です。%[4]d 回必要です。", "Since the previous step passed, the call log has %[3]d %[1]s; %[4]d are needed.", callsWanted(c.Action, c.Caller, c.Result, c.Code, n), i18n.Text{}, n, min)}
}

func evalDenyChanged(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	want := *c.Denied
	if slices.Contains(e.env.Cloud.Faults().Deny, c.Action) != want {
		if want {
			return failf("IAM は %s を拒否していません。", "IAM does not deny %s.", c.Action)
		}
		return failf("IAM はまだ %s を拒否しています。", "IAM still denies %s.", c.Action)
	}
	for _, en := range e.hist {
		if en.Kind == history.KindFaults && slices.Contains(en.Faults.Deny, c.Action) == want {
			if want {
				return passf("IAM が %s を拒否するようにしました", "IAM was made to deny %s", c.Action)
			}
			return passf("IAM が %s を許可するようにしました", "IAM was made to allow %s again", c.Action)
		}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	return failf("前のステップの後、%s の拒否は切り替えられていません。", "the denial of %s was not changed since the previous step.", c.Action)
}

func evalRequest(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	key := format.Namespace + "/" + c.Name
	n, min := 0, cmp.Or(c.Min, 1)
	var last, other *dataplane.Trace
	others := 0
	for _, en := range e.hist {
		if en.Kind != history.KindTrace {
			continue
		}
		tr := en.Trace
		if tr.Origin == dataplane.OriginLab || tr.Service != key || (c.Via != "" && tr.Kind != c.Via) {
			continue
		}
		if c.WhileOff != "" && !en.WasOff(c.WhileOff) {
			continue
		}
		okStatus := tr.Status == 200
		if (c.Result == "" || c.Result == "ok") != okStatus {
			others++
			other = tr
			continue
		}
		if c.Policy != "" && tr.Policy != c.Policy {
			others++
			other = tr
			continue
		}
		if c.ExtraHop != nil && tr.ExtraHop != *c.ExtraHop {
			others++
			other = tr
			continue
		}
		if c.SourceKept != nil && (tr.SourceIPSeenByPod == tr.ClientIP) != *c.SourceKept {
			others++
			other = tr
			continue
		}
		n++
		last = tr
	}
	if n >= min {
		return passf("条件に合うリクエストが %d 回ありました (最後は %s。Pod %s が見た送信元は %s)", "%d request(s) as the step asks (the last, %s: Pod %s saw the source %s)",
			n, last.ID, cmp.Or(last.Pod, "-"), cmp.Or(last.SourceIPSeenByPod, "-"))
	}
	if e.histErr != nil {
		return e.truncated()
	}
	via := pathWords(c.Via)
	if others > 0 {
		return Outcome{false, join2("前のステップが通ってから%[2]s Service %[3]s へ送られたリクエストのうち、このステップの条件に合うものは %[4]d 回です (%[5]d 回必要)。合わなかったものが %[6]d 回あり、最後の答えは %[1]s でした。",
			"Since the previous step passed, %[4]d of the requests sent to Service %[3]s%[2]s met this step's conditions (%[5]d needed); %[6]d did not, the last of them answered %[1]s.", summarize(*other), via, c.Name, n, min, others)}
	}
	return Outcome{false, join2("前のステップが通ってから、%[2]s Service %[3]s へ送られたリクエストはまだありません。画面のリクエストパネルか curl で送ってください。",
		"Since the previous step passed, no request has been sent to Service %[3]s%[2]s: send some from the page's request panel or with curl.", i18n.Text{}, via, c.Name)}
}

// i18nf formats a verdict whose second argument is a word said
// differently in each language (wja, wen).
func i18nf(ja, en string, name, wja, wen string, rest ...any) i18n.Text {
	return i18n.Text{
		JA: fmt.Sprintf(ja, append([]any{name, wja}, rest...)...),
		EN: fmt.Sprintf(en, append([]any{name, wen}, rest...)...),
	}
}

// evalUnwatched: the Service was created while the controller was off and
// no controller reported on it while that controller stayed off. What
// happened after the controller came back does not matter, so switching
// it on early does not take the step away.
func evalUnwatched(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	var created *history.Entry
	for i, en := range e.hist {
		if en.Kind != history.KindObject {
			continue
		}
		o := en.Object
		if created == nil {
			if o.Resource == "services" && o.Namespace == format.Namespace && o.Name == c.Name && o.Verb == history.VerbCreated && en.WasOff(c.WhileOff) {
				created = &e.hist[i]
			}
			continue
		}
		if o.Resource != "events" || o.New == nil || !en.WasOff(c.WhileOff) {
			continue
		}
		ev, ok := o.New.(*corev1.Event)
		if !ok || ev.InvolvedObject.UID != types.UID(created.Object.UID) {
			continue
		}
		// The apiserver's repair loops may report on a new Service; they
		// do not watch it for a load balancer.
		if strings.HasSuffix(cmp.Or(ev.ReportingController, ev.Source.Component), "-repair-controller") {
			continue
		}
		return failf("Service %s にはイベント %s (%s) が付きました: 誰かが見ています。", "Service %s got event %s from %s: someone is watching it.",
			c.Name, ev.Reason, cmp.Or(ev.ReportingController, ev.Source.Component))
	}
	if created == nil {
		if e.histErr != nil {
			return e.truncated()
		}
		if t, ok := e.stuckTerminating(ctx, c.Name); ok {
			return Outcome{false, t}
		}
		return failf("前のステップの後、%s controller がオフの間に Service %s は作られていません。", "Service %[2]s was not created while the %[1]s controller was off, since the previous step.", c.WhileOff, c.Name)
	}
	return passf("Service %s は %s controller がオフの間に作られ、その間だれもイベントを付けませんでした", "Service %s was created while the %s controller was off, and nobody reported on it while it stayed off",
		c.Name, c.WhileOff)
}
