// Package vpccnitest holds the integration test of kube-system on the
// vpc-cni profile as `ccmlab serve --profile vpc-cni` builds it: the
// Amazon VPC CNI's aws-node DaemonSet beside kube-proxy and CoreDNS, and
// a Pod with a VPC address resolving names through CoreDNS.
package vpccnitest
