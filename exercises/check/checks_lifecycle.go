package check

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Checks of the lessons added for the rest of the chapter: a Service's
// deletion and its finalizer, a stopped VM and the shutdown taint, rate
// limits, which controller made which cloud call, and requests the
// student sent. They read the lab and its call log and traces; none sends
// a request or changes anything.

// lifecycleKinds is this file's part of the kinds table (checks_extra.go).
func lifecycleKinds() map[string]checkKind {
	state := map[string][]string{"state": {"pending", "set"}}
	return map[string]checkKind{
		"serviceCleanupFinalizer": {params: []string{"!name"}, eval: evalServiceCleanupFinalizer},
		"serviceTerminating":      {params: []string{"!name"}, eval: evalServiceTerminating},
		"serviceGone":             {params: []string{"!name"}, eval: evalServiceGone, evidence: true},
		"shutdownCleared":         {eval: evalShutdownCleared, evidence: true},
		"throttle":                {params: []string{"!state"}, enum: map[string][]string{"state": {"on", "off"}}, eval: evalThrottle, evidence: true},
		"throttleRetried":         {eval: evalThrottleRetried, evidence: true},
		"servicesExternalIP":      {params: []string{"!selector", "!state", "min"}, enum: state, eval: evalServicesExternalIP},
		"causeNamed":              {eval: evalCauseNamed, evidence: true},
	}
}

// lifecycleAnswerKinds is this file's part of the answer kinds.
func lifecycleAnswerKinds() map[string]answerKind {
	return map[string]answerKind{
		"ingressField": {name: true, values: answerIngressField},
		"callMethod":   {name: true, values: answerCallMethod},
	}
}

// calls returns the cloud calls among entries.
func calls(entries []history.Entry) []*cloud.Call {
	var out []*cloud.Call
	for _, en := range entries {
		if en.Kind == history.KindCall && en.Call != nil && en.Call.State == cloud.CallDone {
			out = append(out, en.Call)
		}
	}
	return out
}

// ---- deletion and the finalizer ----

func evalServiceCleanupFinalizer(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	if !slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		return failf("Service %s に %s の finalizer がありません (finalizers: %v)。", "Service %s has no %s finalizer (finalizers: %v).",
			c.Name, servicehelper.LoadBalancerCleanupFinalizer, svc.Finalizers)
	}
	return passf("Service %s には %s の finalizer が付いています", "Service %s carries the %s finalizer", c.Name, servicehelper.LoadBalancerCleanupFinalizer)
}

func evalServiceTerminating(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, _, ok := e.service(ctx, c.Name)
	if !ok {
		if t, orphan := e.orphanedLB(c.Name); orphan {
			return Outcome{false, t}
		}
		return failf("Service %s がありません。削除の途中で止まっているはずの Service です (Service controller を止めてから削除しましたか?)。",
			"Service %s is gone; it should be waiting halfway through its deletion (did you stop the Service controller before deleting it?).", c.Name)
	}
	if svc.DeletionTimestamp == nil {
		return failf("Service %s はまだ削除されていません (deletionTimestamp がありません)。", "Service %s has not been deleted yet (no deletionTimestamp).", c.Name)
	}
	if !slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		return failf("Service %s に %s の finalizer がありません。", "Service %s has no %s finalizer.", c.Name, servicehelper.LoadBalancerCleanupFinalizer)
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	return passf("Service %s は Terminating のまま (finalizer %s)、ロードバランサー %s も残っています",
		"Service %s is Terminating (finalizer %s) and load balancer %s is still there", c.Name, servicehelper.LoadBalancerCleanupFinalizer, lb.Name)
}

func evalServiceGone(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	_, err := e.env.Client.CoreV1().Services(format.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err == nil {
		return failf("Service %s はまだあります。", "Service %s still exists.", c.Name)
	}
	if !apierrors.IsNotFound(err) {
		return errOutcome(err)
	}
	tag := format.Namespace + "/" + c.Name
	// Every load balancer, the lab's own and the AWS model's (a Classic
	// ELB or NLB left behind counts too).
	for _, lb := range e.env.Cloud.LoadBalancerViews() {
		if cloud.TaggedService(lb.Tags) == tag {
			if t, orphan := e.orphanedLB(c.Name); orphan {
				return Outcome{false, t}
			}
			return failf("Service %s は消えましたが、ロードバランサー %s がクラウドに残っています。", "Service %s is gone but load balancer %s is still in the cloud.", c.Name, lb.Name)
		}
	}
	caller := ccmnames.Caller("service")
	for _, call := range calls(e.hist) {
		if call.Action == cloud.ActionDeleteLoadBalancer && call.Caller == caller && call.Error == "" {
			return passf("%s がロードバランサーを削除し (クラウド API の呼び出しログ #%d)、Service %s も消えました",
				"the %s deleted the load balancer (call #%d) and Service %s is gone", caller, call.Seq, c.Name)
		}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	return failf("Service %s は消えましたが、前のステップの後の %s による DeleteLoadBalancer がクラウド API の呼び出しログにありません。", "Service %s is gone, but the call log has no DeleteLoadBalancer by the %s since the previous step.", c.Name, caller)
}

// ---- a stopped VM ----

// stoppedSince: instances a StopInstances call (by anyone) addressed
// since the exercise started, by ID.
func (e *evalCtx) stoppedSince() ([]string, error) {
	entries, err := e.sinceStart()
	var ids []string
	for _, call := range calls(entries) {
		if call.Action == cloud.ActionStopInstances && call.Error == "" {
			for _, r := range call.Resources {
				if strings.HasPrefix(r, "i-") && !slices.Contains(ids, r) {
					ids = append(ids, r)
				}
			}
		}
	}
	return ids, err
}

func hasShutdownTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintNodeShutdown })
}

func evalShutdownCleared(ctx context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	ids, err := e.stoppedSince()
	if err != nil {
		return e.truncated()
	}
	if len(ids) == 0 {
		return failf("演習を始めてから停止したインスタンスがありません。", "no instance has been stopped since the exercise started.")
	}
	started := false
	for _, call := range calls(e.hist) {
		if call.Action == cloud.ActionStartInstances && call.Error == "" && slices.ContainsFunc(call.Resources, func(r string) bool { return slices.Contains(ids, r) }) {
			started = true
		}
	}
	if !started {
		return failf("停止した VM をまだ起動 (start) していません。", "the stopped VM has not been started again.")
	}
	for _, id := range ids {
		inst, ok := e.env.Cloud.LookupInstance(id)
		if !ok || inst.State != cloud.InstanceRunning {
			return failf("インスタンス %s はまだ running ではありません。", "instance %s is not running yet.", id)
		}
		node, err := e.env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			return errOutcome(err)
		}
		if !kube.NodeReady(node) {
			return failf("Node %s はまだ Ready ではありません。", "Node %s is not Ready yet.", node.Name)
		}
		if hasShutdownTaint(node) {
			return failf("Node %s にはまだ %s の taint があります。", "Node %s still carries the %s taint.", node.Name, cloudproviderapi.TaintNodeShutdown)
		}
	}
	return passf("VM は動いていて、Node は Ready、shutdown の taint は外れています", "the VM runs again, its Node is Ready and the shutdown taint is gone")
}

// ---- rate limits ----

func evalThrottle(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	f := e.env.Cloud.Faults()
	on := f.QPS > 0
	if want := c.State == "on"; on != want {
		if on {
			return failf("クラウド API はまだ絞られています (qps %g, burst %d)。", "the cloud API is still throttled (qps %g, burst %d).", f.QPS, f.Burst)
		}
		return failf("クラウド API のレート制限がありません (qps 0 = 無制限)。", "the cloud API has no rate limit (qps 0 = unlimited).")
	}
	for _, en := range e.hist {
		if en.Kind == history.KindFaults && en.Faults != nil && (en.Faults.QPS > 0) == on {
			if on {
				return passf("クラウド API を qps %g, burst %d に絞りました", "the cloud API was limited to qps %g, burst %d", f.QPS, f.Burst)
			}
			return passf("クラウド API のレート制限を外しました", "the cloud API's rate limit was lifted")
		}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	return failf("前のステップの後、レート制限は変えられていません。", "the rate limit was not changed since the previous step.")
}

// retryGap is the least gap between a throttled call and the retry that
// counts as a backoff: the Service controller's first retry delay is 5 s.
const retryGap = 4 * time.Second

func evalThrottleRetried(_ context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	caller := ccmnames.Caller("service")
	calls := calls(e.hist)
	for i, t := range calls {
		if !cloud.IsThrottleCode(t.ErrorCode) || t.Caller != caller {
			continue
		}
		// The same call: same action, same resources and, for a describe
		// by filters (cloud-provider-aws's DescribeSubnets), same request.
		for _, r := range calls[i+1:] {
			if r.Caller == caller && r.Action == t.Action && slices.Equal(r.Resources, t.Resources) && r.Request == t.Request && r.Time.Sub(t.Time) >= retryGap {
				return passf("#%d の %s は %s で失敗し、%s 後の #%d で再試行されました", "call #%d (%s) was throttled (%s) and retried %s later as #%d",
					t.Seq, t.Action, t.ErrorCode, r.Time.Sub(t.Time).Round(100*time.Millisecond), r.Seq)
			}
		}
	}
	if e.histErr != nil {
		return e.truncated()
	}
	return failf("Throttling で失敗した呼び出しの再試行 (同じ相手への同じ呼び出し、%s 以上あと) がまだクラウド API の呼び出しログにありません。",
		"the call log shows no retry yet of a throttled call (the same call on the same resource, at least %s later).", retryGap)
}

func evalServicesExternalIP(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	sel, err := labels.Parse(c.Selector)
	if err != nil {
		return errOutcome(err)
	}
	l, err := e.env.Client.CoreV1().Services(format.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return errOutcome(err)
	}
	var lbs []corev1.Service
	for _, s := range l.Items {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			lbs = append(lbs, s)
		}
	}
	if min := max(c.Min, 1); len(lbs) < min {
		return failf("%s に合う LoadBalancer の Service は %d 個です (%d 個以上のはず)。", "%d LoadBalancer Services match %s (want at least %d).", len(lbs), c.Selector, min)
	}
	var waiting []string
	for _, s := range lbs {
		if set := ingressOf(&s) != ""; set != (c.State == "set") {
			waiting = append(waiting, s.Name)
		}
	}
	if len(waiting) > 0 {
		if c.State == "set" {
			o := failf("まだ EXTERNAL-IP の無い Service: %s", "Services still without an EXTERNAL-IP: %s", strings.Join(waiting, ", "))
			if t, ok := e.retryWait(ctx, waiting); ok {
				o = wayOut(o, t)
			}
			return o
		}
		return failf("もう EXTERNAL-IP のある Service: %s", "Services that already have an EXTERNAL-IP: %s", strings.Join(waiting, ", "))
	}
	if c.State == "set" {
		return passf("%d 個の Service すべてに EXTERNAL-IP があります", "all %d Services have an EXTERNAL-IP", len(lbs))
	}
	return passf("%d 個の Service すべてが <pending> です", "all %d Services are <pending>", len(lbs))
}

// ---- diagnosis ----

func evalCauseNamed(ctx context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	if e.env.Causes == nil {
		return failf("このラボでは原因を答えられません。", "this lab cannot take a diagnosis.")
	}
	named, correct, err := e.env.Causes.CauseNamed(ctx)
	if err != nil {
		return errOutcome(err)
	}
	switch {
	case !named:
		return failf("まだ原因を答えていません。", "you have not named a cause yet.")
	case correct:
		return passf("1 回目の答えで原因を言い当てました", "your first answer named the cause")
	}
	// Only the first answer counts: a wrong one ends the diagnosis too.
	return passf("答えた原因は外れでした。本当の原因が表示されています", "the cause you named was not it: the real cause is shown")
}

// ---- ip or hostname ----

// answerIngressField: "hostname" or "ip", whichever field of the Service's
// status.loadBalancer.ingress holds its address.
func answerIngressField(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	svc, o, ok := e.service(ctx, a.Name)
	if !ok {
		return nil, o
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		switch {
		case in.Hostname != "":
			return []string{"hostname"}, Outcome{}
		case in.IP != "":
			return []string{"ip"}, Outcome{}
		}
	}
	return nil, failf("Service %s の ingress はまだ空です。", "Service %s's ingress is still empty.", a.Name)
}

// ---- the interface behind the calls ----

// answerCallMethod: the cloudprovider.Interface method that made the
// calls of the action named by a.Name since the previous step, as the call
// log shows it ("LoadBalancer.EnsureLoadBalancer"). Only the whole name
// counts: the method's own name alone is often the action's
// ("Routes.CreateRoute" makes CreateRoute), which the prompt gives away.
func answerCallMethod(_ context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	var out []string
	for _, call := range calls(e.hist) {
		if call.Action != a.Name || call.Method == "" {
			continue
		}
		if !slices.Contains(out, call.Method) {
			out = append(out, call.Method)
		}
	}
	if len(out) == 0 {
		if e.histErr != nil {
			return nil, e.truncated()
		}
		return nil, failf("前のステップの後、CCM の %s 呼び出しがまだクラウド API の呼び出しログにありません。", "the call log has no %s by the CCM since the previous step yet.", a.Name)
	}
	return out, Outcome{}
}
