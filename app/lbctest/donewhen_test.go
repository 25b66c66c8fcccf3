//go:build !unit

package lbctest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

const nlbClass = "service.k8s.aws/nlb"

var tgbResource = schema.GroupVersionResource{Group: "elbv2.k8s.aws", Version: "v1beta1", Resource: "targetgroupbindings"}

// TestDoneWhen is issue 40's check on `ccmlab serve --addons lbc
// --profile vpc-cni`.
func TestDoneWhen(t *testing.T) {
	cptest.Need(t)
	p, err := profile.Get("vpc-cni")
	if err != nil {
		t.Fatal(err)
	}
	l := sim.DefaultLab()
	l.Profile, l.Addons, l.Nodes = p, []string{"lbc"}, 2
	l.Controllers, _ = p.ParseControllers("")
	l.AWSProvider = ""
	lab, err := apptest.Serve(env, l)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(env.Ctx, 5*time.Minute)
	defer cancel()
	c := lab.Client

	waitFor(t, ctx, "the controller's Deployment is ready", func() (bool, string) {
		d, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, sim.LBCName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 1, fmt.Sprintf("ready %d", d.Status.ReadyReplicas)
	})

	t.Run("log has the controller's own lines", func(t *testing.T) {
		waitFor(t, ctx, "its log", func() (bool, string) {
			text := controllerLog(t, ctx, lab)
			return strings.Contains(text, `"msg":"version"`) && strings.Contains(text, "Starting Controller"), tail(text)
		})
	})

	t.Run("CRD exists", func(t *testing.T) {
		ac, err := apiextclient.NewForConfig(lab.Config.RestConfig)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ac.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "targetgroupbindings.elbv2.k8s.aws", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	if _, err := c.AppsV1().Deployments("default").Create(ctx, web(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("plain Service gets the class and an internal NLB", func(t *testing.T) {
		svc, err := c.CoreV1().Services("default").Create(ctx, lbService("plain", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(svc.Spec.LoadBalancerClass, ""); got != nlbClass {
			t.Fatalf("loadBalancerClass %q, want %q (the webhook)", got, nlbClass)
		}
		host := waitIngress(t, ctx, lab, "plain")
		nlb := nlbByDNS(t, ctx, lab, host)
		if nlb.Scheme != "internal" {
			t.Errorf("NLB %s scheme %q, want internal", nlb.Name, nlb.Scheme)
		}
		// The front-end security group the controller makes for the NLB
		// (pkg/service/model_build_managed_sg.go): the listener's port
		// open to 0.0.0.0/0 when the Service names no source ranges,
		// whatever the scheme.
		sgs, err := lab.Cloud.DescribeSecurityGroupsAWS(cloud.WithCaller(ctx, "test"), nlb.SecurityGroups, nil)
		if err != nil {
			t.Fatal(err)
		}
		var front *cloud.SecurityGroup
		for i, g := range sgs {
			if g.Tags["service.k8s.aws/stack"] == "default/plain" {
				front = &sgs[i]
			}
		}
		if front == nil {
			t.Fatalf("NLB %s groups %v: none is the Service's front-end group", nlb.Name, nlb.SecurityGroups)
		}
		if !slices.ContainsFunc(front.Ingress, func(p cloud.IPPermission) bool {
			return p.Protocol == "tcp" && p.FromPort == 80 && p.ToPort == 80 && slices.Contains(p.CIDRs, "0.0.0.0/0")
		}) {
			t.Errorf("front-end group %s (%s) ingress %+v, want tcp 80 from 0.0.0.0/0", front.ID, front.Name, front.Ingress)
		}
	})

	t.Run("external ip Service gets a TargetGroupBinding and ip targets", func(t *testing.T) {
		if _, err := c.CoreV1().Services("default").Create(ctx, lbService("ipmode", map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-type":            "external",
			"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
		}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(t, ctx, lab, "ipmode")
		dc, err := dynamic.NewForConfig(lab.Config.RestConfig)
		if err != nil {
			t.Fatal(err)
		}
		var tgARN string
		waitFor(t, ctx, "a TargetGroupBinding of type ip", func() (bool, string) {
			list, err := dc.Resource(tgbResource).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, o := range list.Items {
				name, _, _ := unstructured.NestedString(o.Object, "spec", "serviceRef", "name")
				tt, _, _ := unstructured.NestedString(o.Object, "spec", "targetType")
				if name == "ipmode" && tt == "ip" {
					tgARN, _, _ = unstructured.NestedString(o.Object, "spec", "targetGroupARN")
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d bindings", len(list.Items))
		})
		// The kubelets put the Pods' IPs on their nodes' interfaces
		// (lab/kubelet/eniaddrs.go), where the controller resolves a Pod's
		// ENI before it registers the Pod's IP as a target.
		waitFor(t, ctx, "the target group's targets are the Pods' IPs", func() (bool, string) {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			var want []string
			for _, p := range pods.Items {
				if p.Status.PodIP != "" {
					want = append(want, p.Status.PodIP)
				}
			}
			tgs, err := lab.Cloud.DescribeTargetGroups(cloud.WithCaller(ctx, "test"), []string{tgARN}, "", nil)
			if err != nil || len(tgs) != 1 {
				return false, fmt.Sprintf("target group %s: %v", tgARN, err)
			}
			tg := tgs[0]
			var got []string
			for _, tt := range tg.Targets {
				got = append(got, tt.ID)
			}
			slices.Sort(want)
			slices.Sort(got)
			// ip targets over TCP do not keep the client's address unless
			// asked (AWS's default; the data plane follows the attribute).
			if v := tg.Attributes["preserve_client_ip.enabled"]; v != "false" {
				return false, "preserve_client_ip.enabled " + v + ", want false"
			}
			return tg.TargetType == "ip" && len(want) == 2 && slices.Equal(got, want), fmt.Sprintf("type %s targets %v, pods %v || log: %s", tg.TargetType, got, want, tail(controllerLog(t, ctx, lab)))
		})
	})

	t.Run("without the webhook, type external alone stays pending", func(t *testing.T) {
		// As the exercises' reset turns it off (the chart's
		// enableServiceMutatorWebhook=false); it returns once the
		// apiserver no longer calls it.
		changed, err := lab.SetLBCServiceWebhook(ctx, false)
		if err != nil || !changed {
			t.Fatalf("SetLBCServiceWebhook(false): changed %t, %v", changed, err)
		}
		mw, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "aws-load-balancer-webhook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(mw.Webhooks, func(w admissionv1.MutatingWebhook) bool { return w.Name == "mservice.elbv2.k8s.aws" }) {
			t.Fatal("mservice.elbv2.k8s.aws still in the webhook configuration")
		}
		if s, err := c.CoreV1().Services("default").Create(ctx, lbService("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || s.Spec.LoadBalancerClass != nil {
			t.Fatalf("a new LoadBalancer Service after the switch: %v, class %v", err, s.Spec.LoadBalancerClass)
		}
		if _, err := c.CoreV1().Services("default").Create(ctx, lbService("extonly", map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-type": "external",
		}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Barrier: a Service created after it that the controller does
		// take gets its NLB; by then the first has been seen by both
		// controllers.
		if _, err := c.CoreV1().Services("default").Create(ctx, lbService("barrier", nil, withClass()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(t, ctx, lab, "barrier")
		svc, err := c.CoreV1().Services("default").Get(ctx, "extonly", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.LoadBalancerClass != nil || len(svc.Status.LoadBalancer.Ingress) > 0 {
			t.Errorf("Service extonly: class %v ingress %v, want no class and <pending>", svc.Spec.LoadBalancerClass, svc.Status.LoadBalancer.Ingress)
		}
	})

	t.Run("deleting the Services removes everything the controller made", func(t *testing.T) {
		// One after another: the shared backend group
		// (k8s-traffic-<cluster>-<hash>) goes with the last Service that
		// used it, and Release decides "last" from its informer's view of
		// the other Services' finalizers (isBackendSGRequired in
		// pkg/networking/backend_sg_provider.go). Deleted together, a
		// Service already released but still cached with its finalizer can
		// make each release think another still needs the group, and it
		// stays until the next Service comes and goes.
		for _, name := range []string{"plain", "ipmode", "extonly", "barrier"} {
			if err := c.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "Service "+name+" gone", func() (bool, string) {
				_, err := c.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
		}
		cctx := cloud.WithCaller(ctx, "test")
		nodeGroup := lab.Cloud.AWSNetworkInfo().NodeGroupID
		made := func(tags map[string]string) bool { _, ok := tags["elbv2.k8s.aws/cluster"]; return ok }
		waitFor(t, ctx, "no Service, binding, NLB, target group, group or node-group rule of the controller's left", func() (bool, string) {
			var left []string
			svcs, err := c.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, s := range svcs.Items {
				if s.Spec.Type == v1.ServiceTypeLoadBalancer {
					left = append(left, "service "+s.Name+" (finalizers "+strings.Join(s.Finalizers, ",")+")")
				}
			}
			dc, err := dynamic.NewForConfig(lab.Config.RestConfig)
			if err != nil {
				return false, err.Error()
			}
			if tgbs, err := dc.Resource(tgbResource).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
				for _, o := range tgbs.Items {
					left = append(left, "targetgroupbinding "+o.GetName())
				}
			}
			nlbs, err := lab.Cloud.DescribeNLBs(cctx, nil, nil)
			if err != nil {
				return false, err.Error()
			}
			for _, lb := range nlbs {
				if made(lb.Tags) {
					left = append(left, "nlb "+lb.Name)
				}
			}
			tgs, err := lab.Cloud.DescribeTargetGroups(cctx, nil, "", nil)
			if err != nil {
				return false, err.Error()
			}
			for _, tg := range tgs {
				if made(tg.Tags) {
					left = append(left, "target group "+tg.Name)
				}
			}
			sgs, err := lab.Cloud.DescribeSecurityGroupsAWS(cctx, nil, nil)
			if err != nil {
				return false, err.Error()
			}
			for _, g := range sgs {
				if made(g.Tags) {
					left = append(left, "group "+g.Name)
				}
				if g.ID == nodeGroup {
					for _, p := range g.Ingress {
						if strings.HasPrefix(p.Description, "elbv2.k8s.aws/") {
							left = append(left, fmt.Sprintf("node-group rule %s %d-%d from %v", p.Protocol, p.FromPort, p.ToPort, p.GroupIDs))
						}
					}
				}
			}
			return len(left) == 0, strings.Join(left, "; ")
		})
	})

	// A panic the controller recovers from (controller-runtime logs it and
	// requeues) is still a sign the lab answered what AWS would not.
	t.Run("the switch scales the Deployment and reads it back", func(t *testing.T) {
		// The Service webhook back on, as the lbc exercises' reset has it.
		if changed, err := lab.SetLBCServiceWebhook(ctx, true); err != nil || !changed {
			t.Fatalf("SetLBCServiceWebhook(true): changed %t, %v", changed, err)
		}
		if s, err := c.CoreV1().Services("default").Create(ctx, lbService("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || ptr.Deref(s.Spec.LoadBalancerClass, "") != nlbClass {
			t.Fatalf("a new LoadBalancer Service with the webhook back: %v", err)
		}
		if !lab.Manager.Status()["lbc"] {
			t.Fatal("the lbc switch is off while the controller's Deployment runs")
		}
		if err := lab.Manager.Disable("lbc"); err != nil {
			t.Fatal(err)
		}
		d, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, sim.LBCName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := ptr.Deref(d.Spec.Replicas, 1); r != 0 {
			t.Errorf("switched off: the Deployment asks for %d replicas, want 0", r)
		}
		waitFor(t, ctx, "the switch reads off", func() (bool, string) { return !lab.Manager.Status()["lbc"], "on" })
		// With the controller down, its Service webhook fails closed: a new
		// Service is refused, as on a cluster whose controller is scaled
		// to 0 (the chart's failurePolicy Fail).
		if _, err := c.CoreV1().Services("default").Create(ctx, lbService("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "mservice.elbv2.k8s.aws") {
			t.Errorf("a new Service with the controller scaled to 0: %v, want the webhook's failure", err)
		}
		// kubectl scale, as an operator would: the switch follows. kubectl
		// sends a merge patch to the scale subresource (no resourceVersion),
		// so the Deployment controller's status writes cannot conflict with it.
		if _, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, sim.LBCName, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}, "scale"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the switch reads on", func() (bool, string) { return lab.Manager.Status()["lbc"], "off" })
		if err := lab.Manager.Enable("lbc"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "a new Service admitted again", func() (bool, string) {
			_, err := c.CoreV1().Services("default").Create(ctx, lbService("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil, fmt.Sprint(err)
		})
	})

	t.Run("the controller's log has no panic", func(t *testing.T) {
		if text := controllerLog(t, ctx, lab); strings.Contains(text, "Observed a panic") {
			i := strings.Index(text, "Observed a panic")
			t.Errorf("the controller panicked: %s", text[i:min(len(text), i+1500)])
		}
	})
}

func withClass() func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(nlbClass) }
}

func lbService(name string, ann map[string]string, opts ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func web() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					// nginx, which the lab's runtime serves (it has no
					// busybox httpd: such a container would crash and its
					// Pod's readiness flap, and ip targets with it).
					Name: "web", Image: "nginx:1.29", Ports: []v1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
}

func waitIngress(t *testing.T, ctx context.Context, lab *apptest.Lab, name string) string {
	t.Helper()
	var host string
	waitFor(t, ctx, "Service "+name+" gets a hostname", func() (bool, string) {
		s, err := lab.Client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			host = s.Status.LoadBalancer.Ingress[0].Hostname
			return host != "", ""
		}
		ev, _ := lab.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		var msgs []string
		for _, e := range ev.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		return false, strings.Join(msgs, " | ") + " || log: " + tail(controllerLog(t, ctx, lab))
	})
	return host
}

func nlbByDNS(t *testing.T, ctx context.Context, lab *apptest.Lab, host string) cloud.NLB {
	t.Helper()
	lbs, err := lab.Cloud.DescribeNLBs(cloud.WithCaller(ctx, "test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range lbs {
		if lb.DNSName == host {
			return lb
		}
	}
	t.Fatalf("no NLB has DNS name %s", host)
	return cloud.NLB{}
}

// controllerLog is the controller Pod's log, as kubectl logs reads it.
func controllerLog(t *testing.T, ctx context.Context, lab *apptest.Lab) string {
	pods, err := lab.Client.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + sim.LBCName})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	b, err := lab.Client.CoreV1().Pods(metav1.NamespaceSystem).GetLogs(pods.Items[0].Name, &v1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "logs: " + err.Error()
	}
	return string(b)
}

func tail(s string) string {
	if len(s) > 1500 {
		return s[len(s)-1500:]
	}
	return s
}

// waitFor polls cond until it holds or ctx ends (then fails with cond's
// last word).
func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not by the deadline; last: %s", what, last)
		case <-tick.C:
		}
	}
}
