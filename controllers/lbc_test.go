//go:build !unit

package controllers

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/controllers/lbc"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

func (l *lab) endpointSlice(svc string, ready map[string]bool, port int32) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc + "-test", Namespace: l.ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "ccmlab-test"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	ips := make([]string, 0, len(ready))
	for ip := range ready {
		ips = append(ips, ip)
	}
	slices.Sort(ips)
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready[ip])}})
	}
	return es
}

// withAWSAPI serves the lab's cloud in AWS's wire protocol on a loopback
// listener and gives the manager its endpoint, as the served lab does.
func withAWSAPI(t *testing.T) labOpt {
	return func(c *Config) {
		keys := awsapi.NewKeys()
		h, err := awsapi.New(awsapi.Config{Cloud: c.Cloud, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c.AWSAPI, c.AWSKeys = func() string { return srv.URL }, keys
	}
}

// nlbByName is the lbc's NLB as the page and the checks read it.
func (l *lab) nlbByName(name string) (cloud.LoadBalancer, bool) {
	return l.cloud.LookupLoadBalancer(name)
}

func TestLBCAddon(t *testing.T) {
	l := newLab(t, "vpc-cni", nil, withAddons(AddonLBC), withAWSAPI(t))
	if st := l.mgr.Status(); !st[AddonLBC] || !st[profile.Service] {
		t.Fatalf("Status = %v", st)
	}
	l.addNodesBeforeServiceController(2)
	nlbSpec := l.lbService("nlb", ptr.To(lbc.LoadBalancerClass))
	nlbSpec.Annotations = map[string]string{lbc.AnnotationTargetType: "ip"}
	nlb := l.createService(nlbSpec)
	none := l.createService(l.lbService("none", ptr.To("example.com/none")))
	es, err := l.client.DiscoveryV1().EndpointSlices(l.ns).Create(l.ctx,
		l.endpointSlice("nlb", map[string]bool{"10.0.1.10": true, "10.0.2.20": true, "10.0.3.30": false}, 8080), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := lbc.LoadBalancerName(nlb)
	eventually(t, 15*time.Second, "ip targets are the ready Pod IPs", func() (bool, string) {
		lb, ok := l.nlbByName(name)
		return ok && slices.Equal(targetIDs(lb), []string{"10.0.1.10:8080", "10.0.2.20:8080"}), strings.Join(targetIDs(lb), " ")
	})
	lb, _ := l.nlbByName(name)
	if lb.TargetType != cloud.TargetTypeIP || lb.Kind != cloud.LBKindNetwork || lb.Listeners[0].Port != 80 || lb.Listeners[0].TargetPort != 8080 {
		t.Errorf("lb = %+v", lb)
	}
	eventually(t, 10*time.Second, "status, finalizer and event", func() (bool, string) {
		s := l.getService("nlb")
		ok := ingressOf(s) == lb.DNSName && slices.Contains(s.Finalizers, lbc.Finalizer) &&
			slices.Contains(reasons(l.events(s.UID)), lbc.ReasonReconciled)
		return ok, jsonOf(s.Status) + " " + jsonOf(s.Finalizers) + " " + jsonOf(reasons(l.events(s.UID)))
	})

	// A Pod becomes ready, another goes away: targets follow.
	es.Endpoints = []discoveryv1.Endpoint{
		{Addresses: []string{"10.0.2.20"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{"10.0.3.30"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
	}
	if es, err = l.client.DiscoveryV1().EndpointSlices(l.ns).Update(l.ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "targets follow the EndpointSlice", func() (bool, string) {
		lb, _ := l.nlbByName(name)
		return slices.Equal(targetIDs(lb), []string{"10.0.2.20:8080", "10.0.3.30:8080"}), strings.Join(targetIDs(lb), " ")
	})

	// A cloud error becomes a FailedDeployModel event; lifting it heals.
	if err := l.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionRegisterTargets}}); err != nil {
		t.Fatal(err)
	}
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.4.40"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	if _, err := l.client.DiscoveryV1().EndpointSlices(l.ns).Update(l.ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "FailedDeployModel", func() (bool, string) {
		for _, e := range l.events(nlb.UID) {
			if e.Reason == lbc.ReasonFailedDeploy && strings.Contains(e.Message, "AccessDenied") &&
				strings.Contains(e.Message, "assumed-role/ccmlab-ccm/load-balancer-controller") {
				return true, ""
			}
		}
		return false, jsonOf(reasons(l.events(nlb.UID)))
	})
	if err := l.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "healed", func() (bool, string) {
		lb, _ := l.nlbByName(name)
		return len(lb.Targets) == 3, strings.Join(targetIDs(lb), " ")
	})

	// The other class: nobody touches it.
	time.Sleep(time.Second)
	n := l.getService("none")
	if jsonOf(n.Status) != `{"loadBalancer":{}}` || len(n.Finalizers) != 0 {
		t.Errorf("class example.com/none: status %s finalizers %v", jsonOf(n.Status), n.Finalizers)
	}
	if evs := l.controllerEvents(none.UID); len(evs) != 0 {
		t.Errorf("class example.com/none got events %v", reasons(evs))
	}
	if lbs := l.cloud.LoadBalancerViews(); len(lbs) != 1 || lbs[0].Kind != cloud.LBKindNetwork {
		t.Errorf("load balancers %+v, want only the nlb one (none of the lab's own)", lbs)
	}
	// Every lbc call came over the AWS API (ELBv2, or EC2 for the
	// subnets), under its own name.
	for _, c := range l.cloud.Calls(0) {
		if c.Action == cloud.ActionCreateLoadBalancer && (c.Caller != lbc.Caller || c.Service != cloud.ServiceELBv2) {
			t.Errorf("CreateLoadBalancer by %q over %q", c.Caller, c.Service)
		}
		if c.Caller == lbc.Caller && c.Service != cloud.ServiceELBv2 && c.Service != cloud.ServiceEC2 {
			t.Errorf("lbc called %s over %q, not the AWS API", c.Action, c.Service)
		}
	}

	// Switched off, the Service waits on its finalizer; on again, it goes.
	if err := l.mgr.Disable(AddonLBC); err != nil {
		t.Fatal(err)
	}
	if err := l.client.CoreV1().Services(l.ns).Delete(l.ctx, "nlb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, ok := l.nlbByName(name); !ok {
		t.Fatal("load balancer deleted while the lbc was off")
	}
	if err := l.mgr.Enable(AddonLBC); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "LB and Service deleted", func() (bool, string) {
		_, ok := l.nlbByName(name)
		_, err := l.client.CoreV1().Services(l.ns).Get(l.ctx, "nlb", metav1.GetOptions{})
		return !ok && apierrors.IsNotFound(err), errStr(err)
	})
}
