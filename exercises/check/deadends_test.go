package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Each dead end's check fails saying what happened and the way back, in
// both languages; the same check failing for another reason says none of
// it. The served lab walks into each (exercises TestDeadEnd*).
func TestDeadEndTexts(t *testing.T) {
	taintGone := format.CheckSpec{Kind: "objectChange", Resource: "nodes", Change: ChangeTaintRemoved, By: ByCCM}
	attach := format.CheckSpec{Kind: "cloudCall", Action: "AttachLoadBalancerToSubnets", Caller: "service-controller", Result: "ok"}
	cases := []struct {
		name   string
		spec   format.CheckSpec
		setup  func(f *fixture)
		en, ja string // "" for none: the way-out text must then be absent
	}{
		{"02 taint removed by kubectl", taintGone, func(f *fixture) {
			inst := f.launch()
			old := f.node(inst, 1, tainted)
			n := old.DeepCopy()
			n.Spec.Taints = nil
			f.change("nodes", history.VerbUpdated, old, n, "kubectl-taint")
		}, "removed by hand", "リセット"},
		{"02 taint not removed yet", taintGone, func(f *fixture) { f.node(f.launch(), 1, tainted) }, "", ""},
		{"02 untainted Node never initialized", format.CheckSpec{Kind: "nodesInitialized"}, func(f *fixture) {
			f.node(f.launch(), 1, func(n *corev1.Node) { n.Spec.ProviderID = "" })
		}, "already gone", "リセット"},
		{"02 tainted Node not initialized yet", format.CheckSpec{Kind: "nodesInitialized"}, func(f *fixture) {
			f.node(f.launch(), 1, tainted, func(n *corev1.Node) { n.Spec.ProviderID = "" })
		}, "", ""},
		{"04 Service stuck Terminating", format.CheckSpec{Kind: "unwatched", Name: "web", WhileOff: "service"}, func(f *fixture) {
			f.svc("web", withFinalizer, deleting)
		}, "stuck halfway", "リセット"},
		{"04 Service not created yet", format.CheckSpec{Kind: "unwatched", Name: "web", WhileOff: "service"}, func(*fixture) {}, "", ""},
		{"12 Node deleted by kubectl", format.CheckSpec{Kind: "nodeNotReady"}, func(f *fixture) {
			f.terminate(f.launch())
		}, "kubectl delete node", "リセット"},
		{"12 Node deleted by the controller", format.CheckSpec{Kind: "nodeNotReady"}, func(f *fixture) {
			inst := f.launch()
			f.terminate(inst)
			f.deletingNodeEvent(inst.PrivateDNSName, sourceNodeLifecycleCtrl)
		}, "", ""},
		{"16 the ELB's subnets attached with the AWS CLI", attach, func(f *fixture) {
			f.call("AttachLoadBalancerToSubnets", "aws-cli", "")
		}, "called by aws-cli", "リセット"},
		{"16 a controller's call by another controller is no dead end", format.CheckSpec{Kind: "cloudCall", Action: "DescribeInstances", Caller: "node-controller"}, func(f *fixture) {
			f.call("DescribeInstances", "service-controller", "")
		}, "", ""},
		{"19 a switch while no CCM Pod runs", format.CheckSpec{Kind: "ccmDaemonSet", State: "running"}, func(f *fixture) {
			f.ccmWorld(false, 0, 0, true)
		}, "2 minutes", "リセット"},
		{"20 Services waiting for their retry", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set"}, func(f *fixture) {
			s := f.svc("burst-1", burstLabel)
			f.event(s, s.UID, "SyncLoadBalancerFailed", "Throttling: Rate exceeded")
		}, "retries a failed Service by itself", "オフにしてオンに戻します"},
		{"20 a Service not synced yet", format.CheckSpec{Kind: "servicesExternalIP", Selector: "app=burst", State: "set"}, func(f *fixture) {
			f.svc("burst-1", burstLabel)
		}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			o := f.eval(tc.spec)
			if o.Pass {
				t.Fatalf("passes: %s", o.Detail.EN)
			}
			if tc.en == "" {
				for _, s := range []string{"Reset the exercise", "switch the Service controller off and on"} {
					if strings.Contains(o.Detail.EN, s) {
						t.Errorf("a way out where there is no dead end: %s", o.Detail.EN)
					}
				}
				return
			}
			if !strings.Contains(o.Detail.EN, tc.en) || !strings.Contains(o.Detail.JA, tc.ja) {
				t.Errorf("want %q (ja %q):\nen: %s\nja: %s", tc.en, tc.ja, o.Detail.EN, o.Detail.JA)
			}
		})
	}
}
