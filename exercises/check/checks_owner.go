package check

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Checks of the lb-owner lesson (which controller owns a Service). Both
// find the Service's load balancer by the address in its status, not by
// a name: the CCM names its load balancers after the Service's UID
// (cloudprovider.DefaultLoadBalancerName), the AWS Load Balancer
// Controller after its stack (k8s-<namespace>-<name>-<hash>), and the
// address is what the student reads.

// Tags that say who made a load balancer: cloud-provider-aws tags its
// Classic ELBs and NLBs with the Service (TagNameKubernetesService,
// pkg/providers/v1/aws.go), the controller its own with the stack
// (service.k8s.aws/stack: <namespace>/<name>, StackTags in
// pkg/deploy/tracking/provider.go).
const (
	tagCCMService = "kubernetes.io/service-name"
	tagLBCStack   = "service.k8s.aws/stack"
)

// ownerKinds is this file's part of the kinds table (checks_extra.go).
func ownerKinds() map[string]checkKind {
	return map[string]checkKind{
		"lbOwner": {params: []string{"!name", "!state"}, enum: map[string][]string{"state": {"ccm", "lbc"}}, eval: evalLBOwner},
		"lbScheme": {params: []string{"!name", "!state"},
			enum: map[string][]string{"state": {cloud.SchemeInternal, cloud.SchemeInternetFacing}}, eval: evalLBScheme},
	}
}

// addressedLB is the load balancer the Service's status names (its DNS
// name, or its IP on the ip profile).
func (e *evalCtx) addressedLB(ctx context.Context, name string) (*corev1.Service, *cloud.LoadBalancer, Outcome, bool) {
	svc, o, ok := e.service(ctx, name)
	if !ok {
		return nil, nil, o, false
	}
	var addr string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		addr = in.Hostname
		if addr == "" {
			addr = in.IP
		}
		if addr != "" {
			break
		}
	}
	if addr == "" {
		return svc, nil, failf("Service %s の EXTERNAL-IP はまだ <pending> です。", "Service %s's EXTERNAL-IP is still <pending>.", name), false
	}
	for _, lb := range e.env.Cloud.LoadBalancerViews() {
		if lb.DNSName == addr || lb.IP == addr {
			return svc, lb, Outcome{}, true
		}
	}
	return svc, nil, failf("Service %s の EXTERNAL-IP %s は、クラウドのどのロードバランサーのアドレスでもありません。", "Service %s's EXTERNAL-IP %s is no load balancer's address in the cloud.", name, addr), false
}

// lbKindWord names a load balancer's kind for a verdict, the same in
// both languages.
func lbKindWord(lb *cloud.LoadBalancer) string {
	switch lb.Kind {
	case cloud.LBKindClassic:
		return "Classic ELB"
	case cloud.LBKindNetwork:
		return "NLB"
	}
	return "LB"
}

// evalLBOwner: state "ccm" passes when the Service has no
// loadBalancerClass and its load balancer is one the CCM's provider made
// for it; "lbc" when its class is the controller's and the load balancer
// carries the controller's stack tag for it (it builds only NLBs for
// Services).
func evalLBOwner(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, lb, o, ok := e.addressedLB(ctx, c.Name)
	if !ok {
		return o
	}
	key := svc.Namespace + "/" + svc.Name
	class := ""
	if svc.Spec.LoadBalancerClass != nil {
		class = *svc.Spec.LoadBalancerClass
	}
	kind := lbKindWord(lb)
	switch c.State {
	case "ccm":
		if class != "" {
			return failf("Service %s には loadBalancerClass %s が付いています。CCM の Service controller はクラスの付いた Service を扱いません。",
				"Service %s has loadBalancerClass %s; the CCM's Service controller does not handle a Service with a class.", c.Name, class)
		}
		if lb.Tags[tagCCMService] != key {
			return failf("%s %s は CCM が Service %s のために作ったものではありません (タグ %s が %q)。",
				"%s %s was not made by the CCM for Service %s (tag %s is %q).", kind, lb.Name, c.Name, tagCCMService, lb.Tags[tagCCMService])
		}
		return passf("Service %s にクラスは無く、その %s %s は CCM が作ったものです", "Service %s has no class and its %s %s is the CCM's", c.Name, kind, lb.Name)
	default:
		if class != ccmnames.LBCClass {
			return failf("Service %s の loadBalancerClass は %q です (%s ではありません)。", "Service %s's loadBalancerClass is %q, not %s.", c.Name, class, ccmnames.LBCClass)
		}
		if lb.Tags[tagLBCStack] != key {
			return failf("%s %s は AWS Load Balancer Controller が Service %s のために作ったものではありません (タグ %s が %q)。",
				"%s %s was not made by the AWS Load Balancer Controller for Service %s (tag %s is %q).", kind, lb.Name, c.Name, tagLBCStack, lb.Tags[tagLBCStack])
		}
		return passf("Service %s のクラスは %s で、その %s %s は AWS Load Balancer Controller が作ったものです", "Service %s's class is %s and its %s %s is the AWS Load Balancer Controller's", c.Name, class, kind, lb.Name)
	}
}

// evalLBScheme: the Service's load balancer has that scheme.
func evalLBScheme(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	_, lb, o, ok := e.addressedLB(ctx, c.Name)
	if !ok {
		return o
	}
	kind := lbKindWord(lb)
	if !strings.EqualFold(lb.Scheme, c.State) {
		return failf("Service %s の %s %s のスキームは %s です。", "Service %s's %s %s has scheme %s.", c.Name, kind, lb.Name, lb.Scheme)
	}
	return passf("Service %s の %s %s のスキームは %s です", "Service %s's %s %s has scheme %s", c.Name, kind, lb.Name, lb.Scheme)
}
