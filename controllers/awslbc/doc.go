// Package awslbc runs the real AWS Load Balancer Controller
// (sigs.k8s.io/aws-load-balancer-controller/v3) inside the lab's process:
// the process of the aws-load-balancer-controller Deployment's Pod, which
// the lab's kubelet starts when it runs that Pod (app/sim/lbcpod.go), as
// it runs the CCM for its DaemonSet's Pod.
//
// The wiring is the lab's own reading of the controller's main.go: the
// Service and TargetGroupBinding controllers, the Service, Pod
// readiness-gate and TargetGroupBinding webhooks, on a controller-runtime
// manager. What the lab leaves out is what it cannot serve or does not
// teach: the Ingress (ALB), Gateway API and Global Accelerator controllers,
// and the Shield, WAF, WAFv2 and ACM add-ons. The controller's AWS clients
// are the lab's: static credentials of the lab's key store, requests to
// the lab's loopback AWS API only, never instance metadata (--aws-region
// and --aws-vpc-id are required). Each start gets a fresh metrics registry
// and skips controller-runtime's process-wide controller-name check, so a
// restarted Pod starts the controller again in the same process.
package awslbc

//go:generate sh -c "cp $(go list -m -f '{{.Dir}}' sigs.k8s.io/aws-load-balancer-controller/v3)/config/crd/bases/elbv2.k8s.aws_targetgroupbindings.yaml $(go list -m -f '{{.Dir}}' sigs.k8s.io/aws-load-balancer-controller/v3)/config/crd/bases/elbv2.k8s.aws_ingressclassparams.yaml crds/ && chmod 644 crds/*.yaml"
