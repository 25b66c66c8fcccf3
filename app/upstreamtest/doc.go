// Package upstreamtest tests, on its own control plane, the lab that
// `ccmlab serve --aws-provider=upstream` builds: its CCM runs
// k8s.io/cloud-provider-aws against the lab's AWS API. A package of its
// own because a second lab on the same control plane would run a second
// CCM, and two Service controllers would fight over every Service.
package upstreamtest
