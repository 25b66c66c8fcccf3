//go:build !unit

package exercises

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// needRealLBC waits for the world's AWS Load Balancer Controller (the lbc
// add-on, always the real controller's Deployment since issue 40 item 3)
// to be ready, its Service webhook failing closed until then, and for
// kube-system's add-ons, which the world puts in place while it starts.
// A world without the controller fails the test rather than skipping it.
func needRealLBC(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	testutil.Eventually(t, 120*time.Second, "kube-system's kube-dns Service and the controller's Deployment ready", func() (bool, string) {
		if _, err := env.Client.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, "kube-dns", metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		d, err := env.Client.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, ccmnames.LBCName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas > 0, "controller not ready"
	})
}

// hostnameOf waits for the Service's status to name a host other than
// not, and returns it.
func (w *world) hostnameOf(t *testing.T, name, not string, timeout time.Duration) string {
	t.Helper()
	var host string
	testutil.Eventually(t, timeout, name+"'s EXTERNAL-IP other than "+not, func() (bool, string) {
		svc, err := env.Client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, "pending"
		}
		host = svc.Status.LoadBalancer.Ingress[0].Hostname
		return host != "" && host != not, host
	})
	return host
}

// lbByDNS is the load balancer whose DNS name is host.
func (w *world) lbByDNS(t *testing.T, host string) *cloud.LoadBalancer {
	t.Helper()
	for _, lb := range w.cloud.LoadBalancerViews() {
		if lb.DNSName == host {
			return lb
		}
	}
	t.Fatalf("no load balancer has DNS name %s", host)
	return nil
}

// The lb-owner lesson played as its solution says, on the real
// controller: nothing passes after the reset; the webhook stamps the
// class and the controller makes an internal NLB; the scheme annotation
// replaces it with an internet-facing one under a new name; a Service
// made a LoadBalancer by an update gets the CCM's Classic ELB; the API
// server refuses a class on it; recreating it moves it to a new NLB.
func TestExerciseLBOwner(t *testing.T) {
	w := theWorld(t)
	needRealLBC(t)
	const id = "lb-owner"
	w.reset(t, id)
	w.expectFailFirst(t, id)
	ctx := context.Background()

	w.run(t, id, "stamped", "create deployment")
	w.run(t, id, "stamped", "expose deployment")
	if out := strings.TrimSpace(w.run(t, id, "stamped", "jsonpath")); out != "service.k8s.aws/nlb" {
		t.Fatalf("owner's loadBalancerClass %q, want the webhook's service.k8s.aws/nlb", out)
	}
	w.waitStep(t, id, "stamped", 90*time.Second)
	first := w.hostnameOf(t, "owner", "", 30*time.Second)
	if lb := w.lbByDNS(t, first); lb.Kind != cloud.LBKindNetwork || lb.Scheme != cloud.SchemeInternal {
		t.Fatalf("owner's load balancer %s: kind %q scheme %q, want an internal NLB", lb.Name, lb.Kind, lb.Scheme)
	}
	if r := stepOf(w.check(t, id), "scheme"); r.Status == StepPassed {
		t.Fatalf("scheme passed before the annotation: %s", describe(r))
	}

	w.run(t, id, "scheme", "annotate svc owner")
	w.waitStep(t, id, "scheme", 120*time.Second)
	second := w.hostnameOf(t, "owner", first, 30*time.Second)
	if lb := w.lbByDNS(t, second); lb.Scheme != cloud.SchemeInternetFacing {
		t.Fatalf("owner's new NLB %s scheme %q", lb.Name, lb.Scheme)
	}

	w.run(t, id, "legacy", "--type=NodePort")
	w.run(t, id, "legacy", "patch svc legacy")
	w.waitStep(t, id, "legacy", 90*time.Second)
	classic := w.hostnameOf(t, "legacy", "", 30*time.Second)
	if lb := w.lbByDNS(t, classic); lb.Kind != cloud.LBKindClassic {
		t.Fatalf("legacy's load balancer %s is %q, want the CCM's Classic ELB", lb.Name, lb.Kind)
	}

	// The API server refuses the class on an existing LoadBalancer
	// Service (validateLoadBalancerClassField), and nothing passes.
	c, err := console.New(console.Config{DataDir: env.DataDir, Binary: ccmlabBinary(t)})
	must(t, err)
	res, err := c.Run(ctx, w.stepLine(t, id, "move", "loadBalancerClass"))
	must(t, err)
	if res.ExitCode == 0 || !strings.Contains(res.Output, "may not change once set") {
		t.Fatalf("patching legacy's class: exit %d\n%s", res.ExitCode, res.Output)
	}
	if r := stepOf(w.check(t, id), "move"); r.Status == StepPassed {
		t.Fatalf("move passed before legacy was recreated: %s", describe(r))
	}

	w.run(t, id, "move", "delete svc legacy")
	w.run(t, id, "move", "--type=LoadBalancer")
	w.waitStep(t, id, "move", 120*time.Second)
	if moved := w.hostnameOf(t, "legacy", classic, 30*time.Second); w.lbByDNS(t, moved).Kind != cloud.LBKindNetwork {
		t.Fatalf("legacy's new load balancer (%s) is not an NLB", moved)
	}
	w.expectDone(t, id)
}
