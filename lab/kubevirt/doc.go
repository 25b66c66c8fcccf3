// Package kubevirt is the management side of the kubevirt profile as the
// lab simulates it: the kubevirt.io/v1 VirtualMachineInstance resource (its
// CRD and the few fields a cloud provider reads), the names Cluster API
// gives a tenant cluster's machines, and the Mirror that keeps one VMI in
// the management apiserver for every VM of the lab's cloud, as KubeVirt
// keeps one for every running VM.
//
// The VMI's shape follows kubevirt/kubevirt (its CRD in
// pkg/virt-operator/resource/generate/components/crds.go,
// NewVirtualMachineInstanceCrd); kubevirt.io/api is not a dependency, so
// the fields are declared here. What the lab's kubevirt provider
// (controllers/provider) reads of a VMI is listed in docs/architecture.md
// ("The management side").
package kubevirt
