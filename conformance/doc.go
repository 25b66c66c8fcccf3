// Package conformance runs upstream's own end-to-end tests against a running
// lab: the [Conformance] tests of "[sig-network] Services" and
// "[sig-network] DNS" from k8s.io/kubernetes v1.37.2's test/e2e/network,
// compiled from the module cache, unchanged. They are the judge of whether
// the lab's Pods, Services, kube-proxy rules and cluster DNS behave as a
// Kubernetes cluster's do; a lab test cannot be more honest than a suite
// written by people who never saw the lab.
//
// The package builds only with the conformance tag (`make conformance`
// starts a lab, runs the suite against its kubeconfig and prints what ran,
// passed and failed); it is not part of `make test`, because the suite takes
// longer than the rest of the tests together.
package conformance
