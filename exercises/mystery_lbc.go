package exercises

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// The diagnosis challenge's causes that come from the AWS Load Balancer
// Controller and cloud-provider-aws sharing the AWS annotations
// (docs/aws.md, "Facts behind the lb-owner lesson and the controller's
// mystery causes").
const (
	// CauseExternalNoTargetType: shop carries
	// aws-load-balancer-type: external and no target type. cloud-provider-
	// aws answers ImplementedElsewhere for "external" (isLBExternal), the
	// controller takes "external" only with a target type
	// (checkAWSLoadBalancerTypeAnnotation): nobody builds anything.
	CauseExternalNoTargetType = "external-no-target-type"
	// CauseInternalByDefault: the controller made shop's NLB internal, its
	// default scheme: EXTERNAL-IP is set, nothing outside the VPC reaches it.
	CauseInternalByDefault = "internal-by-default"
)

// lbcCauses are appended to causes().
func lbcCauses() []cause {
	return []cause{
		{CauseExternalNoTargetType,
			i18n.Text{JA: "aws-load-balancer-type: external だけでターゲットタイプが無い", EN: "aws-load-balancer-type: external without a target type"},
			i18n.Text{JA: "shop には annotation service.beta.kubernetes.io/aws-load-balancer-type: external があり、aws-load-balancer-nlb-target-type も loadBalancerClass もありませんでした。cloud-provider-aws は external を「ほかの controller の担当」(ImplementedElsewhere) として何もせず、Service controller はイベント EnsuringLoadBalancer を出しただけで黙ります。AWS Load Balancer Controller が external の Service を引き受けるのは target type (instance か ip) があるときだけなので、誰もロードバランサーを作りません。annotation を外せば CCM が Classic ELB を作り、target type と aws-load-balancer-scheme: internet-facing を足せば controller が外から届く NLB を作ります。",
				EN: "shop carried the annotation service.beta.kubernetes.io/aws-load-balancer-type: external, with no aws-load-balancer-nlb-target-type and no loadBalancerClass. cloud-provider-aws treats external as another controller's job (ImplementedElsewhere) and does nothing, so the Service controller records EnsuringLoadBalancer and falls silent. The AWS Load Balancer Controller takes an external Service only with a target type (instance or ip), so nobody builds a load balancer. Removing the annotation has the CCM build a Classic ELB; adding a target type and aws-load-balancer-scheme: internet-facing has the controller build an NLB reachable from outside."},
			upstreamAWS},
		{CauseInternalByDefault,
			i18n.Text{JA: "NLB が internal (VPC の外から届かない)", EN: "The NLB is internal (unreachable from outside the VPC)"},
			i18n.Text{JA: "shop には loadBalancerClass service.k8s.aws/nlb (controller の Service webhook が新しい LoadBalancer の Service に書き込むもの) が付いていて、AWS Load Balancer Controller が NLB を作りました。スキームを指定しない NLB を controller は internal で作る (v2.2.0 から) ので、EXTERNAL-IP に DNS 名は入り、イベントも SuccessfullyReconciled ですが、その名前はプライベートアドレスを指し、VPC の外 (ccmlab curl) からは届きません。aws elbv2 describe-load-balancers の Scheme で分かります。annotation service.beta.kubernetes.io/aws-load-balancer-scheme: internet-facing を付けると、controller が internet-facing の NLB を作り直します (DNS 名が変わります)。",
				EN: "shop carried loadBalancerClass service.k8s.aws/nlb (what the controller's Service webhook writes into a new LoadBalancer Service) and the AWS Load Balancer Controller built an NLB. An NLB whose Service names no scheme is internal (since v2.2.0), so EXTERNAL-IP holds a DNS name and the event is SuccessfullyReconciled, but the name points to private addresses that nothing outside the VPC (ccmlab curl) reaches. The Scheme in aws elbv2 describe-load-balancers shows it. The annotation service.beta.kubernetes.io/aws-load-balancer-scheme: internet-facing has the controller build an internet-facing NLB in its place (with a new DNS name)."},
			realLBC},
	}
}

// lbcNudges say what the lab would show for these causes, named wrongly.
func lbcNudges() map[string]i18n.Text {
	return map[string]i18n.Text{
		CauseExternalNoTargetType: {JA: "ターゲットタイプの無い external なら、kubectl get svc shop -o yaml の annotations に aws-load-balancer-type: external があり、イベントは EnsuringLoadBalancer だけです。annotation とイベントを確かめてください。",
			EN: "With external and no target type, kubectl get svc shop -o yaml shows aws-load-balancer-type: external in the annotations, and the only event is EnsuringLoadBalancer. Check the annotations and the events."},
		CauseInternalByDefault: {JA: "internal の NLB なら、aws elbv2 describe-load-balancers の Scheme が internal で、ccmlab curl で DNS 名に送ると時間切れになります。スキームを確かめてください。",
			EN: "An internal NLB shows Scheme internal in aws elbv2 describe-load-balancers, and ccmlab curl to its DNS name times out. Check the scheme."},
	}
}

// realLBC: the lbc add-on is the AWS Load Balancer Controller's
// Deployment, with its webhook.
func realLBC(ctx context.Context, s *Service) bool {
	_, err := s.cfg.Env.Client.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, ccmnames.LBCName, metav1.GetOptions{})
	return err == nil
}

// plantLBCCause sets up one of these causes before shop exists: planted
// reports whether causeID was one of them, class is the class shop gets.
// For CauseInternalByDefault it is the controller's, as its Service
// webhook writes it into a new LoadBalancer Service; the challenge runs
// with that webhook off (it requires no add-on), so the reset writes it.
func (s *Service) plantLBCCause(ctx context.Context, causeID string) (planted bool, class *string, err error) {
	switch causeID {
	case CauseExternalNoTargetType:
		if !upstreamAWS(ctx, s) {
			return true, nil, fmt.Errorf("%s needs cloud-provider-aws (the aws or vpc-cni profile)", causeID)
		}
		return true, nil, nil
	case CauseInternalByDefault:
		if !realLBC(ctx, s) {
			return true, nil, fmt.Errorf("%s needs the AWS Load Balancer Controller (--addons lbc): no Deployment %s/%s", causeID, metav1.NamespaceSystem, ccmnames.LBCName)
		}
		class := ccmnames.LBCClass
		if _, ok := s.cfg.Env.Controllers.Status()[ccmnames.AddonLBC]; ok {
			return true, &class, s.cfg.Env.Controllers.Enable(ccmnames.AddonLBC)
		}
		return true, &class, nil
	}
	return false, nil, nil
}

// mysteryShopSpec lets createMysteryObjects shape shop for a cause: the
// type it is created with and its annotations. For
// CauseExternalNoTargetType shop is a Service the controller's Service
// webhook never saw: created as a NodePort Service with the annotation and
// turned into a LoadBalancer by an update (the chart hooks CREATE only),
// as a Service made before the controller was installed. Without the
// controller it is the same Service a student would create.
func mysteryShopSpec(causeID string) (corev1.ServiceType, map[string]string) {
	if causeID == CauseExternalNoTargetType {
		return corev1.ServiceTypeNodePort, map[string]string{ccmnames.AnnotationLBType: "external"}
	}
	return corev1.ServiceTypeLoadBalancer, nil
}

// makeShopLoadBalancer turns a shop created as NodePort into a
// LoadBalancer.
func (s *Service) makeShopLoadBalancer(ctx context.Context) error {
	patch := []byte(`{"spec":{"type":"LoadBalancer"}}`)
	_, err := s.cfg.Env.Client.CoreV1().Services(format.Namespace).Patch(ctx, MysteryService, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("making Service %s a LoadBalancer: %w", MysteryService, err)
	}
	return nil
}

// lbcSymptom: the broken state of these causes has shown; handled
// reports whether causeID was one of them.
func (s *Service) lbcSymptom(svc *corev1.Service, reasons map[string]string, causeID string) (handled, ok bool, why string) {
	ingress := len(svc.Status.LoadBalancer.Ingress) > 0
	switch causeID {
	case CauseExternalNoTargetType:
		_, ensuring := reasons["EnsuringLoadBalancer"]
		if ingress || !ensuring || len(reasons) != 1 {
			return true, false, fmt.Sprintf("want <pending> with only EnsuringLoadBalancer (ingress %v, events %v)", ingress, keys(reasons))
		}
		return true, true, ""
	case CauseInternalByDefault:
		if !ingress {
			return true, false, "no EXTERNAL-IP yet"
		}
		host := svc.Status.LoadBalancer.Ingress[0].Hostname
		for _, lb := range s.cfg.Env.Cloud.LoadBalancerViews() {
			if lb.DNSName == host && host != "" {
				return true, lb.Scheme == cloud.SchemeInternal, "the load balancer " + lb.Name + " is " + lb.Scheme
			}
		}
		return true, false, "no load balancer has the DNS name " + host
	}
	return false, false, ""
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
