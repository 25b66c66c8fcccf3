//go:build !unit

package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestLoadBalancerQuotas: with the lab's own provider (--aws-provider=lab,
// and the ip and kubevirt profiles), a Service whose load balancer the
// cloud's quotas refuse gets the Service controller's
// SyncLoadBalancerFailed event carrying the cloud's error, nothing is
// created, and the Service gets its load balancer once there is room.
func TestLoadBalancerQuotas(t *testing.T) {
	l := newLab(t, "aws", nil)
	l.addNodesBeforeServiceController(1)
	q := l.cloud.Config().Quotas
	failedWith := func(svc *v1.Service, text string) {
		t.Helper()
		eventually(t, 30*time.Second, "SyncLoadBalancerFailed saying "+text, func() (bool, string) {
			for _, e := range l.events(svc.UID) {
				if e.Reason == "SyncLoadBalancerFailed" && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, text) {
					return true, ""
				}
			}
			return false, jsonOf(reasons(l.events(svc.UID)))
		})
		if ingressOf(l.getService(svc.Name)) != "" {
			t.Errorf("%s has an ingress past the quota", svc.Name)
		}
	}

	t.Run("more ports than listeners per load balancer", func(t *testing.T) {
		svc := l.lbService("many-ports", nil)
		svc.Spec.Ports = nil
		for i := range q.ListenersPerLoadBalancer + 1 {
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(8000 + i), TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP})
		}
		svc = l.createService(svc)
		failedWith(svc, fmt.Sprintf("TooManyListeners: You've reached the limit on the number of listeners per load balancer: this lab allows %d listeners per load balancer", q.ListenersPerLoadBalancer))
		if lbs, err := l.cloud.DescribeLoadBalancers(cloud.WithCaller(l.ctx, "test")); err != nil || len(lbs) != 0 {
			t.Fatalf("load balancers after the refusal: %d, %v", len(lbs), err)
		}
		if err := l.client.CoreV1().Services(l.ns).Delete(l.ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("more load balancers than the quota", func(t *testing.T) {
		ctx := cloud.WithCaller(l.ctx, "test")
		for i := range q.LoadBalancers {
			if _, err := l.cloud.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{Name: fmt.Sprintf("filler-%d", i),
				Listeners: []cloud.Listener{{Port: 80, TargetPort: 30080}}}); err != nil {
				t.Fatal(err)
			}
		}
		svc := l.createService(l.lbService("one-too-many", nil))
		failedWith(svc, fmt.Sprintf("TooManyLoadBalancers: You've reached the limit on the number of load balancers for your AWS account: this lab allows %d load balancers", q.LoadBalancers))
		if err := l.cloud.DeleteLoadBalancer(ctx, "filler-0"); err != nil {
			t.Fatal(err)
		}
		// The Service controller retries on its own (5 s, 10 s, ... backoff).
		eventually(t, time.Minute, "an ingress once a load balancer is freed", func() (bool, string) {
			s := l.getService(svc.Name)
			return ingressOf(s) != "", jsonOf(s.Status)
		})
	})
}
