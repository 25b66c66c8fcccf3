package ccmnames

import (
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

// The lbc add-on, the AWS Load Balancer Controller v3.6.2
// (sigs.k8s.io/aws-load-balancer-controller/v3; docs/aws.md).
const (
	// LBCName names its Deployment (in kube-system), ServiceAccount and
	// leader-election Lease prefix, as its Helm chart does for a release
	// called aws-load-balancer-controller.
	LBCName = "aws-load-balancer-controller"
	// LBCCaller is how its cloud calls are logged.
	LBCCaller = "load-balancer-controller"
	// LBCClass selects the Services it owns (its --load-balancer-class
	// default, which its Service webhook sets on new LoadBalancer
	// Services).
	LBCClass = "service.k8s.aws/nlb"
	// LBCFinalizer keeps a Service until its load balancer is deleted
	// (pkg/shared_constants/finalizers.go).
	LBCFinalizer = "service.k8s.aws/resources"
	// AnnotationLBType "external" with a target type (or the older
	// "nlb-ip") hands a Service without a class to it; cloud-provider-aws
	// then leaves it alone.
	AnnotationLBType = "service.beta.kubernetes.io/aws-load-balancer-type"
	// AnnotationTargetType is the controller's target type: "instance"
	// or "ip".
	AnnotationTargetType = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
)

// Caller is the call log's name for a controller's cloud calls:
// "service-controller", or the add-on's own.
func Caller(controller string) string {
	if controller == AddonLBC {
		return LBCCaller
	}
	return controller + "-controller"
}

// LBCExternal reports whether the annotations hand a Service without a
// class to the lbc add-on, as the controller's checkAWSLoadBalancerType-
// Annotation does (pkg/service/service_utils.go:64-77): type nlb-ip, or
// type external with target type ip or instance. Type external alone is
// nobody's: cloud-provider-aws leaves it to another controller.
func LBCExternal(annotations map[string]string) bool {
	switch annotations[AnnotationLBType] {
	case "nlb-ip":
		return true
	case "external":
		t := annotations[AnnotationTargetType]
		return t == "ip" || t == "instance"
	}
	return false
}

// LBCOwns reports whether the lbc add-on takes the Service: its class, or
// no class and LBCExternal (service_utils.go:46-62).
func LBCOwns(svc *v1.Service) bool {
	if c := svc.Spec.LoadBalancerClass; c != nil {
		return *c == LBCClass
	}
	return LBCExternal(svc.Annotations)
}
