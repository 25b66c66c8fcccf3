package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Helpers that write the history the evidence kinds read.

func (f *fixture) record(e history.Entry) uint64 { return f.hist.Record(e).Seq }

// mark makes what was recorded so far "before the previous step".
func (f *fixture) mark() { f.since = f.hist.Mark("step passed") }

func (f *fixture) change(resource, verb string, old, new any, managers ...string) {
	var o, n metav1.Object
	if old != nil {
		o = old.(metav1.Object)
	}
	if new != nil {
		n = new.(metav1.Object)
	}
	cur := n
	if cur == nil {
		cur = o
	}
	ch := &history.ObjectChange{Resource: resource, Namespace: cur.GetNamespace(), Name: cur.GetName(), UID: string(cur.GetUID()), Verb: verb, Managers: managers}
	if old != nil {
		ch.Old = old.(runtime.Object)
	}
	if new != nil {
		ch.New = new.(runtime.Object)
	}
	f.record(history.Entry{Kind: history.KindObject, Object: ch})
}

func (f *fixture) switched(name string, on bool) {
	f.ctrl[name] = on
	f.record(history.Entry{Kind: history.KindSwitch, Switch: &history.Switch{Controller: name, On: on}})
}

func (f *fixture) recordEvent(svc *corev1.Service, reason, msg, from string) {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "." + reason, Namespace: svc.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID},
		Reason:         reason, Message: msg, Source: corev1.EventSource{Component: from}}
	f.change("events", history.VerbCreated, nil, ev)
}

func (f *fixture) call(action, caller, code string) {
	c := &cloud.Call{Action: action, Caller: caller, State: cloud.CallDone, ErrorCode: code}
	if code != "" {
		c.Error = code + ": no"
	}
	f.record(history.Entry{Kind: history.KindCall, Call: c})
}

func (f *fixture) trace(svc string, tr dataplane.Trace) {
	tr.Service = format.Namespace + "/" + svc
	tr.ID = "t" + svc
	f.record(history.Entry{Kind: history.KindTrace, Trace: &tr})
}

func bareSvc(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: format.Namespace, UID: types.UID("uid-" + name)}}
}

func evidenceCases() []checkCase {
	on, off := ptr.To(true), ptr.To(false)
	taintRemoved := func(by ...string) func(f *fixture) {
		return func(f *fixture) {
			a := f.launch()
			old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.PrivateDNSName}}
			tainted(old)
			f.change("nodes", history.VerbUpdated, old, &corev1.Node{ObjectMeta: old.ObjectMeta}, by...)
		}
	}
	lbTrace := dataplane.Trace{Kind: dataplane.KindLoadBalancer, Status: 200, Policy: dataplane.PolicyCluster, ExtraHop: true, ClientIP: "203.0.113.10", SourceIPSeenByPod: "10.0.1.5", Origin: dataplane.OriginAPI}
	return []checkCase{
		{"taint removed by the CCM", format.CheckSpec{Kind: "objectChange", Resource: "nodes", Change: ChangeTaintRemoved, By: ByCCM}, taintRemoved(controllers.FieldManager), true},
		{"taint removed by kubectl", format.CheckSpec{Kind: "objectChange", Resource: "nodes", Change: ChangeTaintRemoved, By: ByCCM}, taintRemoved("kubectl-taint"), false},
		{"taint removed with no writer named", format.CheckSpec{Kind: "objectChange", Resource: "nodes", Change: ChangeTaintRemoved, By: ByCCM}, taintRemoved(), false},
		{"taint removed before the previous step", format.CheckSpec{Kind: "objectChange", Resource: "nodes", Change: ChangeTaintRemoved}, func(f *fixture) {
			taintRemoved(controllers.FieldManager)(f)
			f.mark()
		}, false},
		{"service created while off", format.CheckSpec{Kind: "objectChange", Resource: "services", Name: "web", Change: ChangeCreated, WhileOff: "service"}, func(f *fixture) {
			f.hist.SetSwitches(map[string]bool{"service": false})
			f.change("services", history.VerbCreated, nil, bareSvc("web"), "kubectl-expose")
		}, true},
		{"service created while on", format.CheckSpec{Kind: "objectChange", Resource: "services", Name: "web", Change: ChangeCreated, WhileOff: "service"}, func(f *fixture) {
			f.change("services", history.VerbCreated, nil, bareSvc("web"), "kubectl-expose")
		}, false},

		{"events seen", format.CheckSpec{Kind: "eventSeen", Name: "web", Reasons: []string{"EnsuringLoadBalancer", "EnsuredLoadBalancer"}}, func(f *fixture) {
			s := bareSvc("web")
			f.recordEvent(s, "EnsuringLoadBalancer", "", "service-controller")
			f.recordEvent(s, "EnsuredLoadBalancer", "", "service-controller")
		}, true},
		{"one event missing", format.CheckSpec{Kind: "eventSeen", Name: "web", Reasons: []string{"EnsuringLoadBalancer", "EnsuredLoadBalancer"}}, func(f *fixture) {
			f.recordEvent(bareSvc("web"), "EnsuringLoadBalancer", "", "service-controller")
		}, false},

		{"switched on", format.CheckSpec{Kind: "switched", Controller: "service", Enabled: on}, func(f *fixture) {
			f.switched("service", false)
			f.mark()
			f.switched("service", true)
		}, true},
		{"on, but before the previous step", format.CheckSpec{Kind: "switched", Controller: "service", Enabled: on}, func(f *fixture) {
			f.switched("service", true)
			f.mark()
		}, false},
		{"switched off and back", format.CheckSpec{Kind: "switched", Controller: "service", Enabled: off}, func(f *fixture) {
			f.switched("service", false)
			f.switched("service", true)
		}, false},

		{"denied call", format.CheckSpec{Kind: "cloudCall", Action: cloud.ActionCreateLoadBalancer, Caller: "service-controller", Result: "error", Code: "AccessDenied"}, func(f *fixture) {
			f.call(cloud.ActionCreateLoadBalancer, "service-controller", "AccessDenied")
		}, true},
		{"call succeeded", format.CheckSpec{Kind: "cloudCall", Action: cloud.ActionCreateLoadBalancer, Result: "error"}, func(f *fixture) {
			f.call(cloud.ActionCreateLoadBalancer, "service-controller", "")
		}, false},
		{"either provider's call: the upstream's", format.CheckSpec{Kind: "cloudCall", Action: "RegisterTargets|RegisterInstancesWithLoadBalancer", Result: "ok"}, func(f *fixture) {
			f.call(cloud.ActionRegisterInstancesWithLB, "service-controller", "")
		}, true},
		{"either provider's call: the lab's", format.CheckSpec{Kind: "cloudCall", Action: "RegisterTargets|RegisterInstancesWithLoadBalancer", Result: "ok"}, func(f *fixture) {
			f.call(cloud.ActionRegisterTargets, "service-controller", "")
		}, true},
		{"neither provider's call", format.CheckSpec{Kind: "cloudCall", Action: "RegisterTargets|RegisterInstancesWithLoadBalancer"}, func(f *fixture) {
			f.call(cloud.ActionConfigureHealthCheck, "service-controller", "")
		}, false},

		{"deny set", format.CheckSpec{Kind: "denyChanged", Action: cloud.ActionCreateLoadBalancer, Denied: on}, func(f *fixture) {
			must(f.t, f.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}))
			faults := f.cloud.Faults()
			f.record(history.Entry{Kind: history.KindFaults, Faults: &faults})
		}, true},
		{"deny set before the previous step", format.CheckSpec{Kind: "denyChanged", Action: cloud.ActionCreateLoadBalancer, Denied: on}, func(f *fixture) {
			must(f.t, f.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}))
			faults := f.cloud.Faults()
			f.record(history.Entry{Kind: history.KindFaults, Faults: &faults})
			f.mark()
		}, false},

		{"student's request", format.CheckSpec{Kind: "request", Name: "web", Via: dataplane.KindLoadBalancer, ExtraHop: on, SourceKept: off}, func(f *fixture) {
			f.trace("web", lbTrace)
		}, true},
		{"only the lab's own request", format.CheckSpec{Kind: "request", Name: "web"}, func(f *fixture) {
			tr := lbTrace
			tr.Origin = dataplane.OriginLab
			f.trace("web", tr)
		}, false},
		{"requests that do not fit", format.CheckSpec{Kind: "request", Name: "web", ExtraHop: off}, func(f *fixture) {
			tr := lbTrace
			tr.Status, tr.Error, tr.ExtraHop = 504, "dropped", false
			f.trace("web", tr)
			f.trace("web", lbTrace)
		}, false},
		{"request of another kind", format.CheckSpec{Kind: "request", Name: "web", Via: dataplane.KindNodePort}, func(f *fixture) {
			f.trace("web", lbTrace)
		}, false},

		{"unwatched while off", format.CheckSpec{Kind: "unwatched", Name: "web", WhileOff: "service"}, func(f *fixture) {
			f.switched("service", false)
			s := bareSvc("web")
			f.change("services", history.VerbCreated, nil, s, "kubectl-expose")
			f.switched("service", true) // early: what happens after does not matter
			f.recordEvent(s, "EnsuringLoadBalancer", "", "service-controller")
		}, true},
		{"watched while off", format.CheckSpec{Kind: "unwatched", Name: "web", WhileOff: "service"}, func(f *fixture) {
			f.switched("service", false)
			s := bareSvc("web")
			f.change("services", history.VerbCreated, nil, s, "kubectl-expose")
			f.recordEvent(s, "EnsuringLoadBalancer", "", "someone")
		}, false},
		{"created while on", format.CheckSpec{Kind: "unwatched", Name: "web", WhileOff: "service"}, func(f *fixture) {
			f.change("services", history.VerbCreated, nil, bareSvc("web"), "kubectl-expose")
		}, false},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The ring wrapped past the step's start: evidence kinds fail and say so.
func TestEvidenceTruncated(t *testing.T) {
	f := newFixture(t)
	f.since = f.hist.Mark("reset")
	for range 100 {
		f.call(cloud.ActionDescribeInstances, "node-controller", "")
	}
	o := f.eval(format.CheckSpec{Kind: "cloudCall", Action: cloud.ActionCreateRoute})
	if o.Pass || !strings.Contains(o.Detail.EN, "overflowed") {
		t.Fatalf("%+v", o)
	}
}

func TestAnswers(t *testing.T) {
	f := newFixture(t)
	a := f.launch()
	f.node(a, 0)
	in := Input{}
	for _, tc := range []struct {
		spec  format.AnswerSpec
		value string
		right bool
	}{
		{format.AnswerSpec{Kind: "newNodeInstanceID"}, a.ID, true},
		{format.AnswerSpec{Kind: "newNodeInstanceID"}, strings.ToUpper(a.ID), true},
		{format.AnswerSpec{Kind: "newNodeInstanceID"}, "i-nope", false},
		{format.AnswerSpec{Kind: "newNodeZone"}, a.Zone, true},
		{format.AnswerSpec{Kind: "newNodePrivateIP"}, a.PrivateIP, true},
		{format.AnswerSpec{Kind: "taintRemover"}, controllers.FieldManager, false}, // nothing recorded yet
	} {
		if err := ValidateAnswer(tc.spec); err != nil {
			t.Fatal(err)
		}
		o := CheckAnswer(f.ctx, f.env(), in, tc.spec, tc.value)
		if o.Pass != tc.right || !o.Detail.Complete() {
			t.Errorf("%s %q: %+v", tc.spec.Kind, tc.value, o)
		}
	}
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.PrivateDNSName}}
	tainted(old)
	f.change("nodes", history.VerbUpdated, old, &corev1.Node{ObjectMeta: old.ObjectMeta}, controllers.FieldManager)
	if o := CheckAnswer(f.ctx, f.env(), in, format.AnswerSpec{Kind: "taintRemover"}, controllers.FieldManager); !o.Pass {
		t.Errorf("taintRemover: %+v", o)
	}
	// Guesses from the step's words are not the manager managedFields shows.
	for _, guess := range []string{"node-controller", "cloud-controller-manager", "kubelet"} {
		if o := CheckAnswer(f.ctx, f.env(), in, format.AnswerSpec{Kind: "taintRemover"}, guess); o.Pass {
			t.Errorf("taintRemover passed the guess %q: %+v", guess, o)
		}
	}
	if kube.HasUninitializedTaint(old) == false {
		t.Fatal("fixture")
	}
	for _, bad := range []format.AnswerSpec{{Kind: "nope"}, {Kind: "clientIPSeenByPod"}, {Kind: "newNodeZone", Name: "web"}} {
		if ValidateAnswer(bad) == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	for _, v := range []string{"", "   ", strings.Repeat("x", MaxAnswerLen+1)} {
		if _, err := NormalizeAnswer(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
