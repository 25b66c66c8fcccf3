// Package kube holds the few small Kubernetes helpers that several parts of
// the lab need (the simulated kubelets, the data plane, the flow observer,
// the exercise checks): reading a Node's Ready condition and InternalIP,
// the uninitialized taint a kubelet started with --cloud-provider=external
// registers, and an informer transform that drops managed fields.
//
// They live here once so that every part reads a Node the same way. The
// taint key is upstream's cloudproviderapi.TaintExternalCloudProvider, the
// one the real Node controller removes, never a copy of its spelling.
package kube
