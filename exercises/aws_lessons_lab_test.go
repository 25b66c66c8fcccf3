//go:build !unit

package exercises

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The lessons on what cloud-provider-aws builds around a Classic ELB and
// on the CCM's RBAC, played against the served lab (the aws profile,
// upstream provider, the CCM as a Pod): nothing passes right after the
// reset, a wrong answer is refused, each step passes once its action is
// done.

// elbGroups waits for the Service's Classic ELB and its security group.
func (w *world) elbGroups(t *testing.T, name string) (lbName string, groups []string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, name+"'s Classic ELB with a security group", func() (bool, string) {
		svc := w.service(t, name)
		lb, ok := w.cloud.LookupLoadBalancer(cloudprovider.DefaultLoadBalancerName(svc))
		if !ok || len(lb.SecurityGroups) == 0 {
			return false, "not yet"
		}
		lbName, groups = lb.Name, lb.SecurityGroups
		return true, ""
	})
	return lbName, groups
}

func TestExerciseSecurityGroups(t *testing.T) {
	w := theWorld(t)
	const id = "security-groups"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.failsNow(t, id, "expose")
	w.run(t, id, "expose", "create deployment")
	w.run(t, id, "expose", "expose deployment")
	w.waitStep(t, id, "expose", 60*time.Second)

	_, groups := w.elbGroups(t, "sg-web")
	nodes := w.cloud.NodeSecurityGroups()[0]
	w.failsNow(t, id, "elb-group")
	if res := w.answer(t, id, "elb-group", nodes); res.Correct {
		t.Fatalf("the nodes' group passed as the ELB's: %+v", res)
	}
	if res := w.answer(t, id, "elb-group", groups[0]); !res.Correct {
		t.Fatalf("the ELB's group %s: %+v", groups[0], res)
	}
	w.waitStep(t, id, "elb-group", 5*time.Second)

	w.failsNow(t, id, "node-rule")
	if res := w.answer(t, id, "node-rule", groups[0]); res.Correct {
		t.Fatalf("the ELB's own group passed as the nodes': %+v", res)
	}
	if res := w.answer(t, id, "node-rule", nodes); !res.Correct {
		t.Fatalf("the nodes' group %s: %+v", nodes, res)
	}
	w.waitStep(t, id, "node-rule", 5*time.Second)
	w.expectDone(t, id)
}

func TestExerciseClosedNodeGroup(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	const id = "closed-node-group"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.failsNow(t, id, "serve")
	w.run(t, id, "serve", "create deployment")
	w.run(t, id, "serve", "expose deployment")
	w.answeredByLB(t, "gate-web", 90*time.Second)
	w.waitStep(t, id, "serve", 10*time.Second)

	// What the student types: the rule on the nodes' group whose source
	// is the ELB's group, revoked with the AWS CLI.
	_, groups := w.elbGroups(t, "gate-web")
	nodes := w.cloud.NodeSecurityGroups()[0]
	rule := []cloud.IPPermission{{Protocol: "-1", FromPort: -1, ToPort: -1, GroupIDs: groups[:1]}}
	w.failsNow(t, id, "close")
	must(t, w.cloud.RevokeIngress(cloud.WithCaller(ctx, "aws-cli"), nodes, rule))
	testutil.Eventually(t, 30*time.Second, "gate-web no longer answers", func() (bool, string) {
		tr := w.sendLB(t, "gate-web")
		return tr.Status != 200, tr.Error
	})
	w.waitStep(t, id, "close", 10*time.Second)
	if svc := w.service(t, "gate-web"); len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Errorf("EXTERNAL-IP went away with the rule: %+v", svc.Status)
	}

	// The provider's way back: an annotation makes the Service controller
	// call EnsureLoadBalancer, which adds the rule again.
	w.failsNow(t, id, "reopen")
	w.run(t, id, "reopen", "kubectl annotate")
	testutil.Eventually(t, 90*time.Second, "gate-web answers again", func() (bool, string) {
		tr := w.sendLB(t, "gate-web")
		return tr.Status == 200, tr.Error
	})
	w.waitStep(t, id, "reopen", 10*time.Second)
	w.expectDone(t, id)
}

func TestExerciseCCMRBAC(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	const id = "ccm-rbac"
	w.reset(t, id)
	w.expectFailFirst(t, id)
	writable := func(state string) bool {
		return check.EvaluateStep(ctx, w.svc.cfg.Env, check.Input{}, format.CheckSpec{Kind: "serviceStatusWritable", State: state}).Pass
	}

	w.failsNow(t, id, "forbidden")
	w.run(t, id, "forbidden", `"op":"remove"`)
	if !writable("forbidden") {
		t.Fatal("the exercise's patch left services/status writable: /rules/1 is not the services/status rule")
	}
	w.run(t, id, "forbidden", "create deployment")
	w.run(t, id, "forbidden", "expose deployment")
	w.waitStep(t, id, "forbidden", 60*time.Second)

	w.failsNow(t, id, "restore")
	w.run(t, id, "restore", `"op":"add"`)
	w.waitStep(t, id, "restore", 90*time.Second)
	w.expectDone(t, id)

	// A reset puts the rule back whatever the student left: a rule
	// removed, or the binding deleted.
	must(t, w.svc.removeServiceStatusRule(ctx))
	must(t, env.Client.RbacV1().ClusterRoleBindings().Delete(ctx, serviceControllerRole, metav1.DeleteOptions{}))
	if !writable("forbidden") {
		t.Fatal("services/status still writable without the binding")
	}
	w.reset(t, id)
	if !writable("allowed") {
		t.Fatal("the reset did not restore services/status")
	}
}

// The ip-targets-routes lesson on the served lab (aws profile, lbc add-on):
// an NLB in ip mode reaches the Pod through the Route controller's route;
// deleted with the AWS CLI while the controller is off, the target goes
// unhealthy and requests fail; with the controller back they pass again.
func TestExerciseIPTargetsRoutes(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	const id = "ip-targets-routes"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	w.failsNow(t, id, "ip-ok")
	w.run(t, id, "ip-ok", "create deployment")
	w.run(t, id, "ip-ok", "expose deployment")
	w.answeredByLB(t, "reach", 90*time.Second)
	w.waitStep(t, id, "ip-ok", 30*time.Second)

	// What the student does: the Route controller off, then the route of
	// the Pod's node's podCIDR deleted with the AWS CLI.
	w.failsNow(t, id, "cut")
	must(t, w.manager.Disable(profile.Route))
	pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=reach"})
	must(t, err)
	if len(pods.Items) != 1 || pods.Items[0].Spec.NodeName == "" {
		t.Fatalf("want one scheduled Pod of reach, got %d", len(pods.Items))
	}
	node, err := env.Client.CoreV1().Nodes().Get(ctx, pods.Items[0].Spec.NodeName, metav1.GetOptions{})
	must(t, err)
	// The wrong route first: another node's. The Pod is still reached.
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, n := range nodes.Items {
		if n.Name != node.Name && n.Spec.PodCIDR != "" {
			must(t, w.cloud.DeleteRoute(cloud.WithCaller(ctx, "aws-cli"), n.Spec.PodCIDR))
			break
		}
	}
	if tr := w.sendLB(t, "reach"); tr.Status != 200 {
		t.Fatalf("another node's route cut the Pod off: %d %s", tr.Status, tr.Error)
	}
	w.failsNow(t, id, "cut")

	must(t, w.cloud.DeleteRoute(cloud.WithCaller(ctx, "aws-cli"), node.Spec.PodCIDR))
	// Once its health checks have failed, the NLB fails open to its one
	// unhealthy target, which it cannot reach: the trace says so, as the
	// step's explanation does. (Before that, it still sends to the target
	// as healthy, and fails the same.)
	testutil.Eventually(t, 30*time.Second, "reach fails open and no longer answers", func() (bool, string) {
		tr := w.sendLB(t, "reach")
		failOpen := false
		for _, h := range tr.Hops {
			failOpen = failOpen || h.DetailKey == tracetext.HopPickedFailOpen
		}
		return tr.Status != 200 && failOpen && strings.Contains(tr.Error, "cannot reach Pod IP"), fmt.Sprintf("%d %s", tr.Status, tr.Error)
	})
	w.waitStep(t, id, "cut", 30*time.Second)

	w.failsNow(t, id, "route-back")
	must(t, w.manager.Enable(profile.Route))
	testutil.Eventually(t, 90*time.Second, "reach answers again", func() (bool, string) {
		tr := w.sendLB(t, "reach")
		return tr.Status == 200, tr.Error
	})
	w.waitStep(t, id, "route-back", 30*time.Second)
	w.expectDone(t, id)
}
