package check

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Dead ends: states a student can walk into that no step of the exercise
// leads out of (issue 41 item 3). A failing check that recognises one says
// what happened and the way back (the exercise's reset, or one command),
// never the step's own fix, which lives in the counted hints. Every fact
// these texts state is cited in docs/aws.md, "Facts the lessons state,
// corrected (issue 41)".

// wayOut appends a dead end's sentence to a failing verdict.
func wayOut(o Outcome, t i18n.Text) Outcome {
	o.Detail = i18n.Text{JA: o.Detail.JA + " " + t.JA, EN: strings.TrimSuffix(o.Detail.EN, ".") + ". " + t.EN}
	return o
}

// resetJA and resetEN: the way back for a state only the exercise's reset undoes.
const (
	resetJA = "演習をリセットすると、最初からやり直せます。"
	resetEN = "Reset the exercise to start again."
)

// untaintedByHand: the uninitialized taint was removed by someone other
// than the CCM. The cloud node controller initializes only Nodes that
// still carry it; without it, it only reconciles labels
// (k8s.io/cloud-provider controllers/node/node_controller.go:426-430).
func untaintedByHand() i18n.Text {
	return i18n.Text{
		JA: "Node controller は uninitialized taint の付いた Node しか初期化しないので、taint を手で外された Node には providerID もクラウドのラベルも書かれません。" + resetJA,
		EN: "The Node controller initializes only Nodes that still carry the uninitialized taint, so a Node whose taint was removed by hand never gets its providerID or cloud labels. " + resetEN,
	}
}

// kubectlDeletedNode: a Node deleted by kubectl is not the node-lifecycle
// controller's deletion, and nothing brings it back.
func kubectlDeletedNode() i18n.Text {
	return i18n.Text{
		JA: "削除した Node は戻りません。演習をリセットすると、VM が 3 台以上動く状態に戻り、最初からやり直せます。",
		EN: "A deleted Node does not come back. Reset the exercise: it makes sure at least three VMs run again, and you start over.",
	}
}

// orphanedLB looks for a load balancer tagged for the Service name that no
// longer exists, and says why nobody will delete it: a Service that went
// without the Service controller seeing its deletion (its finalizer
// removed by hand, or while the controller was off) is not in the
// controller's cache, and processServiceDeletion has "nothing left to do"
// (controllers/service/controller.go:903-911). The reset deletes such
// load balancers (TestResetDeletesOrphanedLoadBalancersAndEvents).
func (e *evalCtx) orphanedLB(name string) (i18n.Text, bool) {
	tag := format.Namespace + "/" + name
	var lb string
	for _, v := range e.env.Cloud.LoadBalancerViews() {
		if cloud.TaggedService(v.Tags) == tag {
			lb = v.Name
			break
		}
	}
	if lb == "" {
		return i18n.Text{}, false
	}
	who := i18n.Text{}
	entries, _ := e.sinceStart()
	for _, en := range entries {
		o := en.Object
		if en.Kind == history.KindObject && o.Resource == "services" && o.Namespace == format.Namespace && o.Name == name &&
			o.Verb == history.VerbUpdated && changeMatches(ChangeFinalizerRemoved, o) && !slices.ContainsFunc(o.Managers, ccmnames.IsCCM) {
			who = join2("finalizer %[3]s を外したのは %[1]s です (Service controller ではありません)。", "The finalizer %[3]s was removed by %[1]s, not by the Service controller. ",
				whoWrote(o.Managers), i18n.Text{}, flow.FinalizerLBCleanup)
		}
		// The update that removes the last finalizer of an object being
		// deleted deletes it: the watch shows one deletion, and only the
		// Service controller removes its finalizer when it is on.
		if en.Kind == history.KindObject && o.Resource == "services" && o.Namespace == format.Namespace && o.Name == name &&
			o.Verb == history.VerbDeleted && en.WasOff("service") && who.EN == "" {
			who = i18n.Textf("Service %[1]s は Service controller がオフの間に消えました。finalizer %[2]s は controller 以外の誰かが外したことになります。",
				"Service %[1]s went while the Service controller was off, so someone else removed its finalizer %[2]s. ", name, flow.FinalizerLBCleanup)
		}
	}
	return join2("%[1]sService %[3]s はもうありませんが、そのロードバランサー %[4]s はクラウドに残っています。Service controller が見ていない間に消えた Service のロードバランサーは、controller が戻っても誰も消しません。演習をリセットすると、Service の無くなったロードバランサーも削除され、最初からやり直せます。",
		"%[1]sService %[3]s is gone, but its load balancer %[4]s is still in the cloud: the Service controller does not delete the load balancer of a Service that went while it was not watching, even once it is back. Reset the exercise: it deletes load balancers left without their Service, and you start again.",
		who, i18n.Text{}, name, lb), true
}

// stuckTerminating: the Service is halfway deleted and keeps the
// Service controller's finalizer while that controller is off. Only the
// Service controller removes service.kubernetes.io/load-balancer-cleanup
// (k8s.io/cloud-provider service/helpers/helper.go:45); a controller that
// starts enqueues every Service that needs cleanup
// (controllers/service/controller.go:135-141), and the reset switches it
// on before it deletes the exercise's objects.
func (e *evalCtx) stuckTerminating(ctx context.Context, name string) (i18n.Text, bool) {
	svc, err := e.env.Client.CoreV1().Services(format.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || svc.DeletionTimestamp == nil || !slices.Contains(svc.Finalizers, flow.FinalizerLBCleanup) {
		return i18n.Text{}, false
	}
	return i18n.Textf("Service %[1]s は削除の途中 (Terminating) で止まっています。finalizer %[2]s を外せるのは Service controller だけで、その controller がオフだからです。同じ名前の Service はそれまで作れません。演習をリセットすると、controller がオンに戻って削除が終わり、最初からやり直せます。",
		"Service %[1]s is stuck halfway through its deletion (Terminating): only the Service controller removes its finalizer %[2]s, and that controller is off. No Service of the same name can be created until then. Reset the exercise: it switches the controller back on, which finishes the deletion, and you start again.",
		name, flow.FinalizerLBCleanup), true
}

// otherCaller names a successful call of the wanted action made by
// someone other than the wanted caller, e.g. the student's own
// aws elb attach-load-balancer-to-subnets where the step waits for
// service-controller's: the cloud already is as the controller would
// make it, so the controller has nothing left to call.
func (e *evalCtx) otherCaller(c format.CheckSpec) (i18n.Text, bool) {
	if c.Caller == "" || c.Action == "*" || studentCaller(c.Caller) {
		return i18n.Text{}, false
	}
	actions := strings.Split(c.Action, "|")
	for _, en := range slices.Backward(e.hist) {
		if en.Kind != history.KindCall || en.Call == nil || en.Call.Error != "" || !studentCaller(en.Call.Caller) || !slices.Contains(actions, en.Call.Action) {
			continue
		}
		return i18n.Textf("%[1]s は %[2]s が呼び出しました (%[3]s 以外)。クラウドはもうその状態なので、%[3]s が同じ呼び出しをすることはありません。"+resetJA,
			"%[1]s was called by %[2]s instead of %[3]s: the cloud already is in that state, so %[3]s has nothing left to call. "+resetEN,
			en.Call.Action, en.Call.Caller, c.Caller), true
	}
	return i18n.Text{}, false
}

// studentCaller says whether a call is a student's own: the AWS CLI with
// the keys of aws.env (lab/awsapi.StudentCaller) or the page's cloud panel
// (cloud.CallerUser).
func studentCaller(c string) bool { return c == "aws-cli" || c == cloud.CallerUser }

// retryWait says, for Services still without an address, when their last
// sync failed and how the Service controller retries: its workqueue takes
// a failed Service back after 5 s, doubling to 300 s
// (controllers/service/controller.go:59-60, :121), by itself; a new
// controller enqueues every Service at its start (:135-141), which is why
// switching it off and on retries at once.
func (e *evalCtx) retryWait(ctx context.Context, names []string) (i18n.Text, bool) {
	var ja, en []string
	for _, name := range names {
		l, err := e.env.Client.CoreV1().Events(format.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Service"),
			fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("reason", "SyncLoadBalancerFailed"),
		).String()})
		if err != nil {
			continue
		}
		var last *corev1.Event
		count := int32(0)
		for i := range l.Items {
			ev := &l.Items[i]
			if ev.Reason != "SyncLoadBalancerFailed" || ev.InvolvedObject.Name != name {
				continue
			}
			count += max(ev.Count, 1)
			if last == nil || eventTime(ev).After(eventTime(last)) {
				last = ev
			}
		}
		if last == nil || eventTime(last).Before(e.start) {
			continue
		}
		at := eventTime(last).Local().Format(time.TimeOnly)
		ja = append(ja, fmt.Sprintf("%s (%s に %d 回目の SyncLoadBalancerFailed)", name, at, count))
		en = append(en, fmt.Sprintf("%s (SyncLoadBalancerFailed #%d at %s)", name, count, at))
	}
	if len(ja) == 0 {
		return i18n.Text{}, false
	}
	return join2("同期に失敗した Service: %[1]s。Service controller は失敗した Service を自分で再試行します。待ち時間は 5 秒から始まって失敗のたびに倍になり、最大 300 秒です。すぐに再試行させるには、Service controller をオフにしてオンに戻します (起動した controller はすべての Service を処理し直します)。",
		"Services whose sync failed: %[1]s. The Service controller retries a failed Service by itself, after a delay that starts at 5 s and doubles with each failure, up to 300 s. To retry at once, switch the Service controller off and on again (a controller that starts processes every Service anew).",
		i18n.Text{JA: strings.Join(ja, "、"), EN: strings.Join(en, ", ")}, i18n.Text{}), true
}

// strandedSwitch: the CCM's DaemonSet places no Pod, so no CCM runs and
// a switch of the controller panel, which rewrites the DaemonSet's
// --controllers and waits for a CCM Pod that runs with it
// (controllers.Tuning.SwitchTimeout, 2 minutes), waits in vain.
func strandedSwitch(ds string) i18n.Text {
	return i18n.Textf("CCM の Pod が動いていないので、controller パネルのスイッチは DaemonSet %[1]s の --controllers を書き換えたあと、その引数で動く CCM を最大 2 分 (ラボの上限) 待ち、「no cloud-controller-manager runs」で終わります。書き換えた引数は DaemonSet に残り、CCM の Pod が動き出したときに効きます。"+resetJA,
		"No CCM Pod runs, so a switch of the controller panel rewrites --controllers in DaemonSet %[1]s, waits up to 2 minutes (the lab's limit) for a CCM running with it and ends with \"no cloud-controller-manager runs\"; the rewritten arguments stay in the DaemonSet and apply once a CCM Pod runs. "+resetEN,
		ds)
}
