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
// "external" (cloud-provider-aws then answers ImplementedElsewhere). For
// each one it
//
//   - adds the finalizer "service.k8s.aws/resources",
//   - makes a network load balancer whose target type is the annotation
//     service.beta.kubernetes.io/aws-load-balancer-nlb-target-type:
//     "instance" (the real controller's default: every node's instance on
//     the NodePort) or "ip" (the ready Pod IPs and ports from the Service's
//     EndpointSlices, no NodePort hop),
//   - keeps listeners, target groups and targets in step as Pods and nodes
//     come and go,
//   - writes the NLB's DNS name to status.loadBalancer.ingress, as AWS
//     answers it,
//   - reports "SuccessfullyReconciled" or "FailedDeployModel" events, and
//   - deletes listeners, target groups and the load balancer, then the
//     finalizer, when the Service goes.
//
// # On the wire
//
// Like the real controller it speaks AWS's API through aws-sdk-go-v2: an
// elasticloadbalancingv2 client and an ec2 client pointed at the lab's AWS
// API (lab/awsapi) on loopback, signed with the add-on's own access key
// (the call log names the caller after the key), in the lab's region. The
// endpoint is always set (BaseEndpoint) and must be
// http://127.0.0.1:<port> or http://localhost:<port>, so no request can
// reach real AWS. Without an endpoint (Config.AWS.HTTPClient with
// HandlerTransport) the same requests are served in process.
//
// A reconcile reads first and changes only the difference:
// DescribeLoadBalancers (by name); CreateLoadBalancer (type network,
// scheme internet-facing unless service.beta.kubernetes.io/aws-load-balancer-scheme
// is "internal", one cluster-tagged subnet per zone found with EC2
// DescribeSubnets); DescribeTags and AddTags (elbv2.k8s.aws/cluster,
// service.k8s.aws/stack = namespace/name, service.k8s.aws/resource =
// LoadBalancer, or namespace/name:port on a target group, as the real
// controller tags); DescribeTargetGroups and CreateTargetGroup (one per
// listener, TCP or UDP, TCP health check on the traffic port);
// DescribeTargetHealth, RegisterTargets and DeregisterTargets;
// DescribeListeners and CreateListener, ModifyListener or DeleteListener
// (forward to the target group); DeleteTargetGroup for groups no longer
// wanted. A change of target type, target port or NodePort makes a new
// target group and moves the listener to it. For instance targets it also
// keeps the nodes' security group (EC2 DescribeInstances,
// DescribeSecurityGroups, AuthorizeSecurityGroupIngress,
// RevokeSecurityGroupIngress) open on each NodePort to the clients
// (loadBalancerSourceRanges, else 0.0.0.0/0, or the VPC when internal) and
// the VPC (the NLB's health checks), since instance targets see the
// client's own address. Cleanup deletes listeners, then the Service's
// target groups (found by their tags, attached or not) closing their
// NodePorts, then the load balancer.
//
// The SDK does not retry; the workqueue does, so an injected fault shows as
// this controller's failure and event.
package lbc
