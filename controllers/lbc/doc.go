// Package lbc is the lab's imitation of the AWS Load Balancer Controller
// (kubernetes-sigs/aws-load-balancer-controller), switched on with
// --addons lbc. It is NOT that project: it is a few hundred lines written
// for ccmlab that reproduce the behaviour the chapter talks about, so a
// student can compare the CCM's Service controller with an add-on that
// takes Services over through spec.loadBalancerClass.
//
// It handles Services of type LoadBalancer with spec.loadBalancerClass
// "service.k8s.aws/nlb" (the upstream Service controller skips every
// Service that has a class, so there is exactly one owner), and Services
// without a class annotated service.beta.kubernetes.io/aws-load-balancer-type
// "external" (the lab's provider then answers ImplementedElsewhere, as
// cloud-provider-aws does). For each one it
//
//   - adds the finalizer "service.k8s.aws/resources",
//   - creates a load balancer whose target type is the annotation
//     service.beta.kubernetes.io/aws-load-balancer-nlb-target-type:
//     "instance" (the real controller's default: every node's instance on
//     the NodePort) or "ip" (the ready Pod IPs and ports from the Service's
//     EndpointSlices, no NodePort hop),
//   - keeps listeners, targets and health check in step as Pods come and go,
//   - writes status.loadBalancer.ingress,
//   - reports "SuccessfullyReconciled" or "FailedDeployModel" events, and
//   - deletes the load balancer, then the finalizer, when the Service goes.
//
// Cloud calls are logged as made by "load-balancer-controller".
package lbc
