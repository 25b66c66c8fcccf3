package check

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

func ownerCases() []checkCase {
	// owned gives Service web a load balancer of that scheme tagged by
	// tag (none when empty), with its address in the Service's status,
	// and the class (none when empty).
	owned := func(scheme, tag, class string) func(f *fixture) {
		return func(f *fixture) {
			in := cloud.CreateLoadBalancerInput{Name: "lb-web", Scheme: scheme, Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}
			if tag != "" {
				in.Tags = map[string]string{tag: "default/web"}
			}
			if _, err := f.cloud.CreateLoadBalancer(f.ctx, in); err != nil {
				f.t.Fatal(err)
			}
			lb, _ := f.cloud.LookupLoadBalancer("lb-web")
			f.svc("web", func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: lb.DNSName, IP: lb.IP}}
				if lb.DNSName != "" {
					s.Status.LoadBalancer.Ingress[0].IP = ""
				}
				if class != "" {
					s.Spec.LoadBalancerClass = ptr.To(class)
				}
			})
		}
	}
	ccm := format.CheckSpec{Kind: "lbOwner", Name: "web", State: "ccm"}
	lbc := format.CheckSpec{Kind: "lbOwner", Name: "web", State: "lbc"}
	open := format.CheckSpec{Kind: "lbScheme", Name: "web", State: cloud.SchemeInternetFacing}
	internal := format.CheckSpec{Kind: "lbScheme", Name: "web", State: cloud.SchemeInternal}
	return []checkCase{
		{"the CCM's", ccm, owned("", tagCCMService, ""), true},
		{"a class on the CCM's", ccm, owned("", tagCCMService, ccmnames.LBCClass), false},
		{"untagged as the CCM's", ccm, owned("", "", ""), false},
		{"the controller's", lbc, owned("", tagLBCStack, ccmnames.LBCClass), true},
		{"the controller's tag, no class", lbc, owned("", tagLBCStack, ""), false},
		{"the CCM's, seen as the controller's", lbc, owned("", tagCCMService, ccmnames.LBCClass), false},
		{"pending", lbc, func(f *fixture) { f.svc("web") }, false},
		{"internet-facing", open, owned("", "", ""), true},
		{"internal, wanted internet-facing", open, owned(cloud.SchemeInternal, "", ""), false},
		{"internal", internal, owned(cloud.SchemeInternal, "", ""), true},
		{"no Service", internal, func(f *fixture) {}, false},
	}
}
