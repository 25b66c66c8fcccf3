package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chromedp/chromedp"

	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
	"github.com/ccmlab/ccmlab/web"
)

func kubeClient(t *testing.T, l *lab) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createWeb creates what the chapter's hands-on creates: a Deployment of
// nginx:1.29 and a LoadBalancer Service on port 80 in front of it.
func createWeb(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	labels := map[string]string{"app": "web"}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: "nginx:1.29",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Service: %v", err)
	}
}

func openPage(t *testing.T, l *lab, lang string) *browser {
	t.Helper()
	b := newBrowser(t, needChromium(t), l.page)
	b.do(t, "opening the page", chromedp.Navigate(l.page+"/?lang="+lang))
	b.waitFor(t, "the live state", q("conn-status")+`.dataset.state === "live" && window.ccmlab.store.epoch !== "" && window.ccmlab.stats.renderedMessages === window.ccmlab.store.messages`, 30*time.Second)
	b.waitFor(t, "three Ready nodes", `document.querySelectorAll('[data-testid="nodes"] tr[data-ready="True"]').length >= 3`, 60*time.Second)
	return b
}

// TestServiceFlow is issue 6's first scenario: with the Service controller
// switched off a new LoadBalancer Service stays <pending> at step 1 and the
// page says why; switched on, it reaches step 5 with the hostname; a
// request animates step 6.
func TestServiceFlow(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "ja")

	sw := "ctrl-switch-service"
	b.waitFor(t, "the Service controller's switch", q(sw)+` && `+settled(sw, true), 10*time.Second)
	b.click(t, sw)
	b.waitFor(t, "the Service controller off", settled(sw, false)+` && `+q("ctrl-service")+`.dataset.state === "off"`, switchWait)

	createWeb(t, kubeClient(t, l))

	row := "svc-row-default/web"
	b.waitFor(t, "EXTERNAL-IP <pending>", q(row)+` && `+q(row)+`.querySelector('[data-testid="svc-external-ip"]').textContent === "<pending>"`, 30*time.Second)
	b.waitFor(t, "step 1 done, step 2 stuck with its reason",
		q("svc-step-count")+`.dataset.step === "1" && `+
			q("svc-step-apply")+`.dataset.status === "done" && `+
			q("svc-step-notice")+`.dataset.status === "stuck" && `+
			`!`+q("svc-stuck")+`.hidden && `+q("svc-stuck")+`.dataset.reason === "no-service-controller"`, 30*time.Second)
	reason := eval[string](t, b, q("stuck-reason")+`.textContent`)
	if want := web.T(web.JA, "reason.no-service-controller"); reason != want {
		t.Errorf("stuck reason = %q, want %q", reason, want)
	}
	// The Japanese page says the proof and the detail in Japanese too.
	stored, _, _ := strings.Cut(web.T(web.JA, flowtext.ServiceStored), "{")
	if ev := eval[string](t, b, q("svc-step-apply")+`.querySelector(".step-evidence").textContent`); !strings.HasPrefix(ev, stored) {
		t.Errorf("step 1 evidence = %q, want it to start with %q", ev, stored)
	}
	detail := eval[string](t, b, q("svc-stuck")+`.querySelector(".stuck-message").textContent`)
	if want := web.T(web.JA, flowtext.StuckNoServiceController); detail != want {
		t.Errorf("stuck detail = %q, want %q", detail, want)
	}
	deps := eval[string](t, b, q("ctrl-deps-service")+`.textContent`)
	if !strings.Contains(deps, "1") {
		t.Errorf("the Service controller's card should say one Service waits on it, says %q", deps)
	}

	b.click(t, sw)
	b.waitFor(t, "the Service controller on", settled(sw, true), switchWait)
	b.waitFor(t, "step 5", `Number(`+q("svc-step-count")+`.dataset.step) >= 5 && `+q("svc-step-status")+`.dataset.status === "done"`, 60*time.Second)

	var lbs []struct {
		Name    string `json:"name"`
		DNSName string `json:"dnsName"`
	}
	l.getJSON(t, "/api/cloud/loadbalancers", &lbs)
	if len(lbs) != 1 || lbs[0].DNSName == "" {
		t.Fatalf("want one load balancer with a DNS name, got %+v", lbs)
	}
	host := lbs[0].DNSName
	b.waitFor(t, "the hostname in EXTERNAL-IP", q(row)+`.querySelector('[data-testid="svc-external-ip"]').textContent === `+js(host), 15*time.Second)
	shown := eval[string](t, b, q("dg-status")+`.querySelector("title").textContent`)
	if shown != host {
		t.Errorf("the diagram's EXTERNAL-IP box holds %q, want %q", shown, host)
	}
	b.waitFor(t, "the LB's loopback listener", q("lb-"+lbs[0].Name)+` && `+q("lb-"+lbs[0].Name)+`.querySelector('[data-testid="lb-curl"]') !== null`, 15*time.Second)

	b.waitFor(t, "the send button enabled", `!`+q("send-request")+`.disabled`, 30*time.Second)
	// The data path needs more than step 5: a route to every node's Pod
	// CIDR (the Route controller works on its own schedule) and healthy
	// targets. The page shows both; wait for them as a student would.
	b.waitFor(t, "a route for every node", `document.querySelectorAll('[data-testid="routes"] tr[data-testid^="route-"]').length >= 3`, 60*time.Second)
	b.waitFor(t, "healthy targets", `(() => { const ts = [...document.querySelectorAll('[data-testid="lb-target"]')]; return ts.length >= 3 && ts.every((x) => x.dataset.health === "healthy"); })()`, 60*time.Second)
	b.click(t, "send-request")
	b.waitFor(t, "the packet moving", q("packet")+`.dataset.state !== "idle"`, 15*time.Second)
	b.waitFor(t, "step 6 and the packet at the Pod",
		q("svc-step-traffic")+`.dataset.status === "done" && `+
			q("packet")+`.dataset.state === "arrived" && `+
			q("trace-result")+`.dataset.status === "200"`, 30*time.Second)
	hops := eval[int](t, b, `document.querySelectorAll('[data-testid="diagram"] .hop:not(.template)').length`)
	if hops < 5 {
		t.Errorf("the diagram shows %d hops of the trace, want the real path (>= 5)", hops)
	}

	saveScreenshot(t, b, "e2e-service-flow.png")
	b.check(t)
}

// TestNodeInit is issue 6's second scenario: a VM launched from the page
// becomes a Node that carries the uninitialized taint until the Node
// controller has asked the cloud, and then loses it. Step mode holds the
// cloud calls so the tainted state can be seen.
func TestNodeInit(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "en")

	b.click(t, "stepmode-switch")
	b.waitFor(t, "step mode on", settled("stepmode-switch", true), 10*time.Second)
	b.click(t, "launch-instance")
	// RunInstances itself is held now. Let calls through from the page, one
	// at a time, up to and including RunInstances; nothing after it, so the
	// Node controller's question about the new VM stays held.
	deadline := time.Now().Add(45 * time.Second)
	for {
		// The button is rendered from the store a frame later, and a
		// disabled button swallows a click: wait for both.
		first := eval[string](t, b, `(() => {
  const w = window.ccmlab.store.waiting;
  const next = document.querySelector('[data-testid="stepmode-next"]');
  return w.length && next && !next.disabled ? w[0].action : "";
})()`)
		if first != "" {
			b.click(t, "stepmode-next")
			if first == "RunInstances" {
				break
			}
		}
		if time.Now().After(deadline) {
			b.dump(t)
			t.Fatal("RunInstances never waited in step mode")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.waitFor(t, "the page following the new node", `window.ccmlab.ui.nodeChoice && `+q("node-timeline")+`.dataset.node === window.ccmlab.ui.nodeChoice`, 30*time.Second)
	node := eval[string](t, b, `window.ccmlab.ui.nodeChoice`)
	t.Logf("new node: %s", node)
	b.waitFor(t, "the VM launched", q("node-step-launched")+`.dataset.status === "done"`, 15*time.Second)
	// The kubelet registers the Node by itself; the Node controller's
	// DescribeInstances is held, so the taint must stay.
	b.waitFor(t, "the Node registered with the uninitialized taint", q("node-taint")+`.dataset.state === "present"`, 30*time.Second)
	b.waitFor(t, "registered, not yet untainted",
		q("node-step-registered")+`.dataset.status === "done" && `+q("node-step-untainted")+`.dataset.status !== "done"`, 10*time.Second)
	rowTaint := eval[bool](t, b, `!!document.querySelector('[data-testid="node-row-`+node+`"] [data-testid="taint-uninitialized"]')`)
	if !rowTaint {
		t.Error("the node's row in the Nodes table does not show the uninitialized taint")
	}

	// Let everything through: the Node controller initializes the node.
	b.click(t, "stepmode-switch")
	b.waitFor(t, "step mode off", settled("stepmode-switch", false), 10*time.Second)
	b.waitFor(t, "the taint removed",
		q("node-step-queried")+`.dataset.status === "done" && `+
			q("node-step-written")+`.dataset.status === "done" && `+
			q("node-step-untainted")+`.dataset.status === "done" && `+
			q("node-taint")+`.dataset.state === "removed"`, 60*time.Second)
	providerID := eval[string](t, b, `document.querySelector('[data-testid="node-row-`+node+`"] [data-testid="node-provider-id"]').textContent`)
	if !strings.HasPrefix(providerID, "aws:///") {
		t.Errorf("providerID in the Nodes table = %q, want aws:///<zone>/i-...", providerID)
	}

	saveScreenshot(t, b, "e2e-node-init.png")
	b.check(t)
}

// TestCloudActions: the fault switches and the instance buttons act on the
// real cloud, and the page shows the consequences: a denied
// CreateLoadBalancer is a red call marked ERROR and a stuck step that says
// the cloud refused; throttled calls are marked as such; a stopped and a
// terminated instance say so.
func TestCloudActions(t *testing.T) {
	needChromium(t)
	l := startLab(t)
	b := openPage(t, l, "en")

	b.click(t, "fault-deny")
	b.waitFor(t, "the deny switch on", settled("fault-deny", true)+` && `+q("faults-now")+`.textContent.includes("CreateLoadBalancer")`, 10*time.Second)
	createWeb(t, kubeClient(t, l))
	b.waitFor(t, "the refusal explained", q("svc-stuck")+`.dataset.reason === "cloud-error" && `+q("svc-step-create")+`.dataset.status === "stuck"`, 60*time.Second)
	b.waitFor(t, "a red ERROR row in the call log",
		`[...document.querySelectorAll('[data-testid="calls"] tr[data-state="error"]')].some((r) => r.dataset.errorCode === "AccessDenied" && r.textContent.includes(`+js(web.T(web.EN, "call.error"))+`))`, 10*time.Second)
	b.click(t, "fault-deny")
	b.waitFor(t, "the deny switch off", settled("fault-deny", false), 10*time.Second)
	b.waitFor(t, "step 5 after the controller's retry", `Number(`+q("svc-step-count")+`.dataset.step) >= 5`, 90*time.Second)

	b.click(t, "fault-throttle")
	b.waitFor(t, "the throttle switch on", settled("fault-throttle", true), 10*time.Second)
	// One call per second: a second launch right after the first is refused.
	for i := 0; i < 3; i++ {
		b.click(t, "launch-instance")
		b.waitFor(t, "the launch done", `!window.ccmlab.ui.busy.has("launch")`, 10*time.Second)
	}
	b.waitFor(t, "a THROTTLED row", `[...document.querySelectorAll('[data-testid="calls"] tr[data-state="throttled"]')].some((r) => r.textContent.includes(`+js(web.T(web.EN, "call.throttled"))+`))`, 15*time.Second)
	b.waitFor(t, "the throttled count", q("calls-summary")+`.textContent.match(/(\d+) throttled/) && Number(`+q("calls-summary")+`.textContent.match(/(\d+) throttled/)[1]) > 0`, 5*time.Second)
	saveScreenshot(t, b, "e2e-cloud-faults.png")
	b.click(t, "fault-throttle")
	b.waitFor(t, "the throttle switch off", settled("fault-throttle", false), 10*time.Second)

	id := eval[string](t, b, `[...window.ccmlab.store.instances.values()].find((i) => i.state === "running").id`)
	b.click(t, "inst-stop-"+id)
	b.waitFor(t, "the instance stopped", q("inst-row-"+id)+`.dataset.state === "stopped" && !`+q("inst-start-"+id)+`.disabled`, 30*time.Second)
	b.click(t, "inst-terminate-"+id)
	b.waitFor(t, "the instance terminated", q("inst-row-"+id)+`.dataset.state === "terminated" && `+q("inst-terminate-"+id)+`.disabled`, 30*time.Second)
	// The launch refused by throttling put its error on the page; that
	// is expected, so only the requests are checked.
	b.check(t, "429", "Throttling")
}
