package check

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/history"
)

type fakeCauses struct{ named, correct bool }

func (f fakeCauses) CauseNamed(context.Context) (bool, bool, error) { return f.named, f.correct, nil }

func withFinalizer(s *corev1.Service) {
	s.Finalizers = append(s.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
}

func deleting(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: time.Now()} }

func ingressSet(s *corev1.Service) {
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "x.elb"}}
}

func burstLabel(s *corev1.Service) { s.Labels = map[string]string{"app": "burst"} }

// callAt records a finished cloud call on resources at t.
func (f *fixture) callAt(t time.Time, action, caller, code string, resources ...string) {
	c := &cloud.Call{Action: action, Caller: caller, State: cloud.CallDone, ErrorCode: code, Resources: resources, Time: t}
	if code != "" {
		c.Error = code + ": no"
	}
	f.record(history.Entry{Kind: history.KindCall, Call: c})
}

// stopped launches an instance with a Node (changed by mods), stops it in
// the cloud and records the StopInstances call.
func (f *fixture) stopped(mods ...func(*corev1.Node)) cloud.Instance {
	inst := f.launch()
	f.node(inst, 1, mods...)
	if _, err := f.cloud.StopInstance(f.ctx, inst.ID); err != nil {
		f.t.Fatal(err)
	}
	f.callAt(time.Now(), cloud.ActionStopInstances, "user", "", inst.ID)
	return inst
}

func shutdownTainted(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule})
}

func (f *fixture) faults(fs cloud.Faults) {
	if err := f.cloud.SetFaults(fs); err != nil {
		f.t.Fatal(err)
	}
	cur := f.cloud.Faults()
	f.record(history.Entry{Kind: history.KindFaults, Faults: &cur})
}

func lifecycleCases() []checkCase {
	sgone := format.CheckSpec{Kind: "serviceGone", Name: "fin"}
	lbTagged := func(f *fixture) {
		if _, err := f.cloud.CreateLoadBalancer(f.ctx, cloud.CreateLoadBalancerInput{Name: "a1", Tags: map[string]string{provider.TagServiceName: "default/fin"},
			Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}); err != nil {
			f.t.Fatal(err)
		}
	}
	now := time.Now()
	return []checkCase{
		{"finalizer", format.CheckSpec{Kind: "serviceCleanupFinalizer", Name: "fin"}, func(f *fixture) { f.svc("fin", withFinalizer) }, true},
		{"no finalizer", format.CheckSpec{Kind: "serviceCleanupFinalizer", Name: "fin"}, func(f *fixture) { f.svc("fin") }, false},

		{"terminating", format.CheckSpec{Kind: "serviceTerminating", Name: "fin"}, func(f *fixture) {
			f.lb(f.svc("fin", withFinalizer, deleting), cloud.TargetTypeInstance, 0)
		}, true},
		{"not deleted", format.CheckSpec{Kind: "serviceTerminating", Name: "fin"}, func(f *fixture) {
			f.lb(f.svc("fin", withFinalizer), cloud.TargetTypeInstance, 0)
		}, false},
		{"gone already", format.CheckSpec{Kind: "serviceTerminating", Name: "fin"}, func(*fixture) {}, false},

		{"deleted by the controller", sgone, func(f *fixture) { f.call(cloud.ActionDeleteLoadBalancer, "service-controller", "") }, true},
		{"deleted before the previous step", sgone, func(f *fixture) {
			f.call(cloud.ActionDeleteLoadBalancer, "service-controller", "")
			f.mark()
		}, false},
		{"still there", sgone, func(f *fixture) { f.svc("fin", withFinalizer, deleting) }, false},
		{"lb left behind", sgone, func(f *fixture) {
			lbTagged(f)
			f.call(cloud.ActionDeleteLoadBalancer, "service-controller", "AccessDenied")
		}, false},

		{"started again", format.CheckSpec{Kind: "shutdownCleared"}, func(f *fixture) {
			inst := f.stopped()
			f.mark()
			if _, err := f.cloud.StartInstance(f.ctx, inst.ID); err != nil {
				f.t.Fatal(err)
			}
			f.callAt(time.Now(), cloud.ActionStartInstances, "user", "", inst.ID)
		}, true},
		{"still stopped", format.CheckSpec{Kind: "shutdownCleared"}, func(f *fixture) { f.stopped(shutdownTainted, notReady); f.mark() }, false},
		{"taint still on", format.CheckSpec{Kind: "shutdownCleared"}, func(f *fixture) {
			inst := f.stopped(shutdownTainted)
			f.mark()
			if _, err := f.cloud.StartInstance(f.ctx, inst.ID); err != nil {
				f.t.Fatal(err)
			}
			f.callAt(time.Now(), cloud.ActionStartInstances, "user", "", inst.ID)
		}, false},

		{"throttled", format.CheckSpec{Kind: "throttle", State: "on"}, func(f *fixture) { f.faults(cloud.Faults{QPS: 0.2, Burst: 1}) }, true},
		{"throttled before the previous step", format.CheckSpec{Kind: "throttle", State: "on"}, func(f *fixture) {
			f.faults(cloud.Faults{QPS: 0.2, Burst: 1})
			f.mark()
		}, false},
		{"not throttled", format.CheckSpec{Kind: "throttle", State: "on"}, func(*fixture) {}, false},
		{"lifted", format.CheckSpec{Kind: "throttle", State: "off"}, func(f *fixture) {
			f.faults(cloud.Faults{QPS: 0.2, Burst: 1})
			f.mark()
			f.faults(cloud.Faults{})
		}, true},

		{"retried after backoff", format.CheckSpec{Kind: "throttleRetried"}, func(f *fixture) {
			f.callAt(now, cloud.ActionDescribeLoadBalancers, "service-controller", cloud.ErrThrottling, "a1")
			f.callAt(now.Add(5*time.Second), cloud.ActionDescribeLoadBalancers, "service-controller", "", "a1")
		}, true},
		{"EC2's throttle retried after backoff", format.CheckSpec{Kind: "throttleRetried"}, func(f *fixture) {
			f.callAt(now, cloud.ActionDescribeSubnets, "service-controller", cloud.ErrRequestLimitExceeded, "subnet-1")
			f.callAt(now.Add(5*time.Second), cloud.ActionDescribeSubnets, "service-controller", "", "subnet-1")
		}, true},
		{"retried too soon", format.CheckSpec{Kind: "throttleRetried"}, func(f *fixture) {
			f.callAt(now, cloud.ActionDescribeLoadBalancers, "service-controller", cloud.ErrThrottling, "a1")
			f.callAt(now.Add(time.Second), cloud.ActionDescribeLoadBalancers, "service-controller", "", "a1")
		}, false},

		{"all set", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set", Min: 2}, func(f *fixture) {
			f.svc("burst-1", ingressSet, burstLabel)
			f.svc("burst-2", ingressSet, burstLabel)
		}, true},
		{"one pending", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set", Min: 2}, func(f *fixture) {
			f.svc("burst-1", ingressSet, burstLabel)
			f.svc("burst-2", burstLabel)
		}, false},

		{"named", format.CheckSpec{Kind: "causeNamed"}, func(f *fixture) { f.causes = fakeCauses{named: true} }, true},
		{"not named", format.CheckSpec{Kind: "causeNamed"}, func(f *fixture) { f.causes = fakeCauses{} }, false},
	}
}

func TestLifecycleAnswers(t *testing.T) {
	f := newFixture(t)
	f.svc("addr", ingressSet)
	f.svc("vip", func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	})
	f.svc("none")
	f.record(history.Entry{Kind: history.KindCall, Call: &cloud.Call{Action: cloud.ActionCreateLoadBalancer, Caller: "service-controller",
		Method: "LoadBalancer.EnsureLoadBalancer", State: cloud.CallDone}})
	for _, tc := range []struct {
		spec  format.AnswerSpec
		value string
		right bool
	}{
		{format.AnswerSpec{Kind: "ingressField", Name: "addr"}, "hostname", true},
		{format.AnswerSpec{Kind: "ingressField", Name: "addr"}, "ip", false},
		{format.AnswerSpec{Kind: "ingressField", Name: "vip"}, "IP", true},
		{format.AnswerSpec{Kind: "ingressField", Name: "none"}, "hostname", false},
		{format.AnswerSpec{Kind: "callMethod", Name: cloud.ActionCreateLoadBalancer}, "LoadBalancer.EnsureLoadBalancer", true},
		{format.AnswerSpec{Kind: "callMethod", Name: cloud.ActionCreateLoadBalancer}, "EnsureLoadBalancer", false}, // the bare name is not enough
		{format.AnswerSpec{Kind: "callMethod", Name: cloud.ActionCreateLoadBalancer}, "UpdateLoadBalancer", false},
		{format.AnswerSpec{Kind: "callMethod", Name: cloud.ActionCreateRoute}, "Routes.CreateRoute", false}, // no such call
	} {
		if err := ValidateAnswer(tc.spec); err != nil {
			t.Fatal(err)
		}
		o := CheckAnswer(f.ctx, f.env(), Input{}, tc.spec, tc.value)
		if o.Pass != tc.right || !o.Detail.Complete() {
			t.Errorf("%s(%s) %q: %+v", tc.spec.Kind, tc.spec.Name, tc.value, o)
		}
	}
}
