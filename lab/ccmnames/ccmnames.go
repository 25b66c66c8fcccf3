package ccmnames

import (
	"crypto/sha256"
	"encoding/hex"

	v1 "k8s.io/api/core/v1"
)

// FieldManager is how the apiserver names every CCM controller's writes in
// metadata.managedFields on the AWS-shaped profiles: the user agent up to
// its first "/". Upstream's controllers get their clients through
// rest.AddUserAgent, whose agent starts with the base name of os.Args[0]
// (client-go rest/config.go:533 DefaultKubernetesUserAgent, :629
// AddUserAgent); cloud-provider-aws's image starts
// /bin/aws-cloud-controller-manager (its Dockerfile:56 ENTRYPOINT), so
// on a real cluster every one of its controllers writes as this name.
const FieldManager = "aws-cloud-controller-manager"

// FieldManagerKubevirt is the kubevirt profile's CCM, whose container the
// lab starts as /bin/kubevirt-cloud-controller-manager.
const FieldManagerKubevirt = "kubevirt-cloud-controller-manager"

// FieldManagerFor is the CCM's field manager for a provider name
// (profile.Profile.ProviderName).
func FieldManagerFor(providerName string) string {
	if providerName == "kubevirt" {
		return FieldManagerKubevirt
	}
	return FieldManager
}

// IsCCM says whether a field manager is a CCM's.
func IsCCM(manager string) bool {
	return manager == FieldManager || manager == FieldManagerKubevirt
}

// AddonLBC is the lbc add-on's name among the switches.
const AddonLBC = "lbc"

// The lbc add-on, the lab's imitation of the AWS Load Balancer Controller.
const (
	// LBCCaller is how its cloud calls are logged.
	LBCCaller = "load-balancer-controller"
	// LBCClass selects the Services it owns.
	LBCClass = "service.k8s.aws/nlb"
	// LBCFinalizer keeps a Service until its load balancer is deleted.
	LBCFinalizer = "service.k8s.aws/resources"
	// AnnotationLBType "external" (or the older "nlb-ip") hands a Service
	// without a class to it; cloud-provider-aws then leaves it alone.
	AnnotationLBType = "service.beta.kubernetes.io/aws-load-balancer-type"
)

// Caller is the call log's name for a controller's cloud calls:
// "service-controller", or the add-on's own.
func Caller(controller string) string {
	if controller == AddonLBC {
		return LBCCaller
	}
	return controller + "-controller"
}

// LBCExternal reports whether the annotations hand a Service to the lbc
// add-on (aws-load-balancer-type external or nlb-ip).
func LBCExternal(annotations map[string]string) bool {
	v := annotations[AnnotationLBType]
	return v == "external" || v == "nlb-ip"
}

// LBCLoadBalancerName is the lbc add-on's name for a Service's NLB:
// "k8s-<namespace>-<name>-<hash>" cut to ELB's 32 characters, readable in
// the cloud view, unique through a hash of the UID.
func LBCLoadBalancerName(svc *v1.Service) string {
	sum := sha256.Sum256([]byte(string(svc.UID) + "/" + svc.Namespace + "/" + svc.Name))
	return "k8s-" + cut(svc.Namespace, 8) + "-" + cut(svc.Name, 8) + "-" + hex.EncodeToString(sum[:])[:10]
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
