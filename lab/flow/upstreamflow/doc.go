// Package upstreamflow holds only tests: the six LoadBalancer steps of
// lab/flow followed on the lab `ccmlab serve --aws-provider=upstream`
// builds, where k8s.io/cloud-provider-aws makes Classic ELBs and NLBs
// through the lab's AWS API. It is its own package because a test package
// has one control plane (lab/controlplane/cptest) and one lab on it, and
// lab/flow's own integration tests run the lab's provider.
package upstreamflow
