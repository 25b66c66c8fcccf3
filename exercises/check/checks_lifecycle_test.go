package check

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

type fakeCauses struct{ named, correct bool }

func (f fakeCauses) CauseNamed(context.Context) (bool, bool, error) { return f.named, f.correct, nil }

func (f *fixture) as(caller string) context.Context { return cloud.WithCaller(f.ctx, caller) }

func withFinalizer(s *corev1.Service) {
	s.Finalizers = append(s.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
}

func deleting(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: time.Now()} }

func ingressSet(s *corev1.Service) {
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "x.elb"}}
}

// stopOne launches an instance with a Node and stops it as the user does.
func (f *fixture) stopOne(mods ...func(*corev1.Node)) cloud.Instance {
	inst := f.launch()
	f.node(inst, 1, mods...)
	if _, err := f.cloud.StopInstance(f.as("user"), inst.ID); err != nil {
		f.t.Fatal(err)
	}
	return inst
}

func shutdownTainted(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule})
}

// throttledCloud replaces the fixture's cloud with one on a fake clock
// whose service-controller calls are throttled, and returns the clock.
func (f *fixture) throttledCloud() *clocktesting.FakeClock {
	clk := clocktesting.NewFakeClock(time.Now())
	c, err := cloud.New(cloud.Config{Clock: clk})
	if err != nil {
		f.t.Fatal(err)
	}
	f.cloud = c
	if err := c.SetFaults(cloud.Faults{QPS: 0.001, Burst: 1}); err != nil {
		f.t.Fatal(err)
	}
	ctx := f.as("service-controller")
	_, _ = c.DescribeLoadBalancers(ctx, "a1") // spends the one token
	_, _ = c.DescribeLoadBalancers(ctx, "a1") // throttled
	return clk
}

func lifecycleCases() []checkCase {
	later := func(f *fixture) { f.start = time.Now().Add(time.Hour) }
	sgone := format.CheckSpec{Kind: "serviceGone", Name: "fin"}
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

		{"deleted by the controller", sgone, func(f *fixture) {
			if _, err := f.cloud.CreateLoadBalancer(f.ctx, cloud.CreateLoadBalancerInput{Name: "a1", Tags: map[string]string{provider.TagServiceName: "default/fin"},
				Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}); err != nil {
				f.t.Fatal(err)
			}
			if err := f.cloud.DeleteLoadBalancer(f.as("service-controller"), "a1"); err != nil {
				f.t.Fatal(err)
			}
		}, true},
		{"still there", sgone, func(f *fixture) { f.svc("fin", withFinalizer, deleting) }, false},
		{"lb left behind", sgone, func(f *fixture) {
			if _, err := f.cloud.CreateLoadBalancer(f.ctx, cloud.CreateLoadBalancerInput{Name: "a1", Tags: map[string]string{provider.TagServiceName: "default/fin"},
				Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}); err != nil {
				f.t.Fatal(err)
			}
		}, false},
		{"no delete call", sgone, func(*fixture) {}, false},

		{"stopped", format.CheckSpec{Kind: "instanceStopped"}, func(f *fixture) { f.stopOne() }, true},
		{"stopped before the start", format.CheckSpec{Kind: "instanceStopped"}, func(f *fixture) { f.stopOne(); later(f) }, false},
		{"shutdown taint", format.CheckSpec{Kind: "nodeShutdownTaint"}, func(f *fixture) { f.stopOne(shutdownTainted, notReady) }, true},
		{"no shutdown taint yet", format.CheckSpec{Kind: "nodeShutdownTaint"}, func(f *fixture) { f.stopOne(notReady) }, false},
		{"started again", format.CheckSpec{Kind: "shutdownCleared"}, func(f *fixture) {
			inst := f.stopOne()
			if _, err := f.cloud.StartInstance(f.as("user"), inst.ID); err != nil {
				f.t.Fatal(err)
			}
		}, true},
		{"still stopped", format.CheckSpec{Kind: "shutdownCleared"}, func(f *fixture) { f.stopOne(shutdownTainted) }, false},

		{"node controller described", format.CheckSpec{Kind: "cloudCall", Action: cloud.ActionDescribeInstances, Controller: "node"}, func(f *fixture) {
			_, _ = f.cloud.DescribeInstances(f.as("node-controller"), cloud.DescribeInstancesInput{})
		}, true},
		{"someone else described", format.CheckSpec{Kind: "cloudCall", Action: cloud.ActionDescribeInstances, Controller: "node"}, func(f *fixture) {
			_, _ = f.cloud.DescribeInstances(f.as("service-controller"), cloud.DescribeInstancesInput{})
		}, false},

		{"throttled", format.CheckSpec{Kind: "throttle", State: "on"}, func(f *fixture) {
			if err := f.cloud.SetFaults(cloud.Faults{QPS: 0.2, Burst: 1}); err != nil {
				f.t.Fatal(err)
			}
		}, true},
		{"not throttled", format.CheckSpec{Kind: "throttle", State: "on"}, func(*fixture) {}, false},
		{"lifted", format.CheckSpec{Kind: "throttle", State: "off"}, func(*fixture) {}, true},

		{"throttled calls", format.CheckSpec{Kind: "throttledCalls"}, func(f *fixture) { f.throttledCloud() }, true},
		{"no throttled call", format.CheckSpec{Kind: "throttledCalls"}, func(*fixture) {}, false},
		{"retried after backoff", format.CheckSpec{Kind: "throttleRetried"}, func(f *fixture) {
			clk := f.throttledCloud()
			clk.Step(5 * time.Second)
			_, _ = f.cloud.DescribeLoadBalancers(f.as("service-controller"), "a1")
		}, true},
		{"retried too soon", format.CheckSpec{Kind: "throttleRetried"}, func(f *fixture) {
			clk := f.throttledCloud()
			clk.Step(time.Second)
			_, _ = f.cloud.DescribeLoadBalancers(f.as("service-controller"), "a1")
		}, false},

		{"all set", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set", Min: 2}, func(f *fixture) {
			f.svc("burst-1", ingressSet, func(s *corev1.Service) { s.Labels = map[string]string{"app": "burst"} })
			f.svc("burst-2", ingressSet, func(s *corev1.Service) { s.Labels = map[string]string{"app": "burst"} })
		}, true},
		{"one pending", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set", Min: 2}, func(f *fixture) {
			f.svc("burst-1", ingressSet, func(s *corev1.Service) { s.Labels = map[string]string{"app": "burst"} })
			f.svc("burst-2", func(s *corev1.Service) { s.Labels = map[string]string{"app": "burst"} })
		}, false},

		{"student's request answered", format.CheckSpec{Kind: "requestAnswered", Name: "shop", Via: dataplane.KindLoadBalancer}, func(f *fixture) {
			f.dp.traces = []dataplane.Trace{{Kind: dataplane.KindLoadBalancer, Service: "default/shop", Status: 200, Pod: "default/shop-1", Time: time.Now()}}
		}, true},
		{"student's request failed", format.CheckSpec{Kind: "requestAnswered", Name: "shop", Via: dataplane.KindLoadBalancer}, func(f *fixture) {
			f.dp.traces = []dataplane.Trace{{Kind: dataplane.KindLoadBalancer, Service: "default/shop", Status: 503, Error: "no targets", Time: time.Now()}}
		}, false},
		{"request before the start", format.CheckSpec{Kind: "requestAnswered", Name: "shop", Via: dataplane.KindLoadBalancer}, func(f *fixture) {
			f.dp.traces = []dataplane.Trace{{Kind: dataplane.KindLoadBalancer, Service: "default/shop", Status: 200, Time: time.Now()}}
			later(f)
		}, false},

		{"named", format.CheckSpec{Kind: "causeNamed"}, func(f *fixture) { f.causes = fakeCauses{named: true} }, true},
		{"not named", format.CheckSpec{Kind: "causeNamed"}, func(f *fixture) { f.causes = fakeCauses{} }, false},
	}
}
